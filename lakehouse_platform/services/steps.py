"""Deployment steps that are calls to a service's HTTP API, run by a job as a POSIX shell script with curl.

A catalog serves nothing until its deployment steps ran (Polaris: a catalog and its grants;
Lakekeeper: bootstrap, then a warehouse). They are jobs, not dynamic resources calling the API
from the machine running ``pulumi up``: on aws the catalogs sit behind an internal load balancer
that only a task inside the VPC reaches, so the one definition runs as a container on docker and
as a one-off ECS task on aws (run in order by CD, like the other catalog jobs).

Every script built here waits for the API (bounded), makes each call, treats the API's own
"already there" answer as done, and exits non-zero with the HTTP status and response body
otherwise: running it again is safe, and a failure is loud (the docker target fails the
deployment on a job's non-zero exit). Secrets and ARNs reach it only as environment variables;
request bodies reference them with ``EnvRef`` and are JSON-escaped when the script runs.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: curl in a small image with a shell: what Apache Polaris 1.7.0's own guides run their setup calls
#: with (site/content/guides/minio/docker-compose.yml, service polaris-setup).
CURL_IMAGE = "alpine/curl:8.21.0"
CURL_VERSION = "8.21.0"
#: The image's entrypoint is curl itself; the script runs in the image's shell instead.
SHELL_ENTRYPOINT = ["/bin/sh", "-c"]
#: Answers that mean "not there yet": no connection (000), or a load balancer without a healthy target.
NOT_YET = ("000", "502", "503", "504")
#: How long a script waits for its API. On docker the job starts once the server is healthy; on aws
#: CD may start it while the service's tasks are still starting, so the bound is generous.
WAIT_S = 600

# Shell helpers every script starts with. ``call`` leaves the status in $status and the body in $out
# (curl's own connection errors go to stderr, so they are in the job's log).
PRELUDE = r"""set -eu
out=$(mktemp)
fail() { printf '%s\n' "$*" >&2; exit 1; }
body() { head -c 2000 "$out"; }
json_escape() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }
call() {
  method=$1; url=$2; shift 2
  status=$(curl -sS -o "$out" -w '%{http_code}' -X "$method" "$@" "$url") || status=000
}"""


@dataclass(frozen=True)
class EnvRef:
    """A JSON string value read from an environment variable when the script runs (a secret, an ARN)."""

    name: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.name):
            raise ValueError(f"{self.name!r} is not an environment variable name")


_MARK = "\x00env:"
_MARKED = re.compile(r'"\\u0000env:([A-Za-z_][A-Za-z0-9_]*)\\u0000"')


def _mark(value: object) -> str:
    if isinstance(value, EnvRef):
        return f"{_MARK}{value.name}\x00"
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _double_quoted(text: str) -> str:
    """``text`` escaped for the inside of a double-quoted shell word (expands to itself)."""
    return re.sub(r'([\\"$`])', r"\\\1", text)


def json_word(value: Any) -> str:
    """A double-quoted shell word expanding to the JSON of ``value``; ``EnvRef`` values filled in at run time."""
    text = json.dumps(value, default=_mark, separators=(",", ":"))
    parts = _MARKED.split(text)  # literal, name, literal, name, ...
    # A value is the JSON string quotes (escaped for the shell word) around its escaped expansion.
    word = "".join(_double_quoted(part) if index % 2 == 0
                   else f'\\"$(json_escape "${part}")\\"' for index, part in enumerate(parts))
    return f'"{word}"'


def json_refs(value: Any) -> set[str]:
    """The environment variables a request body reads (its ``EnvRef`` names)."""
    if isinstance(value, EnvRef):
        return {value.name}
    if isinstance(value, dict):
        return set().union(*(json_refs(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(json_refs(v) for v in value)) if value else set()
    return set()


def _label(text: str) -> str:
    return _double_quoted(text)


@dataclass
class Script:
    """A job's script, step by step: ``wait`` for an API, then ``step`` by step, each failing loudly."""

    lines: list[str] = field(default_factory=lambda: [PRELUDE])

    @staticmethod
    def call(method: str, url: str, *args: str, body: Any = None) -> str:
        """One ``call`` line; ``url`` and ``args`` are shell words (e.g. ``'"$API/v1/x"'``), ``body`` JSON."""
        words = ["call", method, url, *args]
        if body is not None:
            words += ["-H", shlex.quote("Content-Type: application/json"), "--data-binary", json_word(body)]
        return " ".join(words)

    def wait(self, what: str, call: str, seconds: int = WAIT_S, ok: Sequence[str] = ("200",)) -> Script:
        """Repeat ``call`` every 2 s while the API is not there yet (``NOT_YET``), for at most ``seconds``.

        Any other answer than ``ok`` fails at once (a 401 will not become a 200 by waiting).
        """
        label = _label(what)
        self.lines += [
            f"deadline=$(( $(date +%s) + {int(seconds)} ))",
            "while :; do",
            f"  {call}",
            f'  case "$status" in {"|".join(ok)}) break ;; {"|".join(NOT_YET)}) ;; '
            f'*) fail "{label}: HTTP $status $(body)" ;; esac',
            f'  [ "$(date +%s)" -lt "$deadline" ] || fail "{label}: not ready after {int(seconds)} s '
            f'(last answer: HTTP $status $(body))"',
            "  sleep 2",
            "done",
            f'echo "{label}: ready"',
        ]
        return self

    def step(self, what: str, call: str, done: Sequence[str] = ("200", "201", "204"),
             already: Sequence[tuple[str, str | None]] = (("409", None),)) -> Script:
        """Make ``call`` once: ``done`` statuses succeed, ``already`` (status, body pattern) mean it was done before."""
        label = _label(what)
        self.lines += [call, 'case "$status" in', f'  {"|".join(done)}) echo "{label}: done (HTTP $status)" ;;']
        for status, pattern in already:
            if pattern is None:
                self.lines.append(f'  {status}) echo "{label}: already done (HTTP $status)" ;;')
            else:
                self.lines.append(
                    f"  {status}) if grep -Eq {shlex.quote(pattern)} \"$out\"; then echo \"{label}: already done\"; "
                    f'else fail "{label}: HTTP $status $(body)"; fi ;;')
        self.lines += [f'  *) fail "{label}: HTTP $status $(body)" ;;', "esac"]
        return self

    def shell(self, *lines: str) -> Script:
        """Raw lines (e.g. reading a token out of the last answer)."""
        self.lines += list(lines)
        return self

    def render(self) -> str:
        return "\n".join([*self.lines, 'echo "all steps done"', ""])
