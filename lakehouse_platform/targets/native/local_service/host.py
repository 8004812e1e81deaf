"""What a service gets from the host: its directories, rendered files, log, user and environment."""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import pwd
import resource
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from lakehouse_platform.targets.native.local_service.errors import LocalServiceError
from lakehouse_platform.targets.native.local_service.inputs import ServiceInputs

LOG_TAIL_LINES = 40
# The only variables a service inherits from the provider's environment (see the package docstring).
INHERITED_ENV_VARS = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "JAVA_HOME")


def tail_log(log_file: str | os.PathLike[str], lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file (read from the end, so big logs are cheap)."""
    try:
        with open(log_file, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            block, data = 8192, b""
            while size > 0 and data.count(b"\n") <= lines:
                step = min(block, size)
                size -= step
                fh.seek(size)
                data = fh.read(step) + data
    except OSError as exc:
        return f"(log {log_file} unreadable: {exc.strerror})"
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def failure(spec: ServiceInputs, reason: str) -> LocalServiceError:
    """An error for the operator: service, reason and the log tail that usually explains it."""
    return LocalServiceError(
        f"service '{spec.service}': {reason}\n"
        f"--- last {LOG_TAIL_LINES} lines of {spec.log_file} ---\n{tail_log(spec.log_file)}"
    )


def log_event(log_file: str, message: str) -> None:
    """Append one timestamped line of our own to the service log (never secrets)."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(log_file, "a", encoding="utf-8") as fh:
        fh.write(f"[local-service {stamp}] {message}\n")


class UserIds(NamedTuple):
    """Everything needed to run a child as another user, resolved before fork (NSS is not fork-safe)."""

    uid: int
    gid: int
    groups: list[int]
    entry: pwd.struct_passwd


def user_ids(user: str | None) -> UserIds | None:
    """The ids of ``user``; None to keep the current user."""
    if not user:
        return None
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise LocalServiceError(f"run_as_user: no such user {user!r}") from None
    return UserIds(entry.pw_uid, entry.pw_gid, os.getgrouplist(user, entry.pw_gid), entry)


def write_files(files: Mapping[str, str], owner: str | None = None) -> None:
    """Write each file atomically with mode 0600 (contents may be secrets, never readable by others)."""
    ids = user_ids(owner)
    for path_text, content in files.items():
        path = Path(path_text)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        # A fresh file created 0600 (O_EXCL, after removing any leftover of a crashed run), so the
        # content never exists with wider permissions.
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(content)
            if ids:
                os.chown(tmp, ids.uid, ids.gid)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise


def remove_files(paths: Iterable[str]) -> None:
    """Remove managed files (rendered config); missing ones are fine."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)



def child_env(spec: ServiceInputs, ids: UserIds | None) -> dict[str, str]:
    """The base environment (see ``INHERITED_ENV_VARS``), the run-as user's identity, then ``env``."""
    env = {k: os.environ[k] for k in INHERITED_ENV_VARS if k in os.environ}
    if ids:
        env.update(HOME=ids.entry.pw_dir, USER=ids.entry.pw_name, LOGNAME=ids.entry.pw_name)
    env.update(spec.env)
    return env


CAP_SYS_RESOURCE = 24


def can_raise_hard_limits() -> bool:
    """Whether this process may raise a hard rlimit: it needs CAP_SYS_RESOURCE, which root in a
    container often lacks, so being root is not enough."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return os.geteuid() == 0


def child_identity(spec: ServiceInputs, ids: UserIds | None) -> dict[str, Any]:
    """Popen arguments that start the child as ``run_as_user`` and with ``ulimit_nofile``.

    No ``preexec_fn``: the provider process runs gRPC threads, and Python code between fork and
    exec in a threaded process can deadlock or crash the child (seen here: a postgres start
    dying with SIGSEGV). Popen's ``user``/``group``/``extra_groups`` switch identity in C, and the
    open-files limit is raised on this process itself, so the child inherits it (raising a soft
    limit up to the hard limit is harmless for the provider, which is short-lived).
    """
    nofile = spec.ulimit_nofile
    if nofile is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if nofile > hard and not can_raise_hard_limits():
            raise LocalServiceError(
                f"service '{spec.service}': ulimit_nofile {nofile} exceeds the hard limit {hard}, "
                "which this process may not raise (needs CAP_SYS_RESOURCE)"
            )
        if soft < nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, max(nofile, hard)))
    if ids is None:
        return {}
    return {"user": ids.uid, "group": ids.gid, "extra_groups": ids.groups}


def prepare_dirs(spec: ServiceInputs, ids: UserIds | None) -> None:
    """Create data dir (0700) and log dir; hand them to the run-as user; check cwd."""
    data_dir = Path(spec.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)  # the service's state, possibly with credentials
    Path(spec.log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(spec.log_file).touch(exist_ok=True)
    if ids:
        # The service (e.g. postgres, which refuses to run as root) must own its state.
        os.chown(data_dir, ids.uid, ids.gid)
        os.chown(spec.log_file, ids.uid, ids.gid)
    if not Path(spec.cwd).is_dir():
        raise LocalServiceError(f"service '{spec.service}': cwd {spec.cwd} is not a directory")
