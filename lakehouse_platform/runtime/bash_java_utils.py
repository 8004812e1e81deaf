"""Start a Flink process the way Flink's own scripts do, as one process: ``BashJavaUtils``, then exec the JVM.

Flink's ``jobmanager.sh``/``taskmanager.sh`` derive the JVM's memory flags (``-Xmx``, ``-Xms``,
``-XX:MaxDirectMemorySize``, ``-XX:MaxMetaspaceSize``) and the matching ``-D`` memory properties from
the configuration with ``org.apache.flink.runtime.util.bash.BashJavaUtils``. This launcher runs that
(with a 64 MB heap of its own), splices its two result lines into the command line at ``{jvm-params}``
and ``{dynamic-params}``, and ``exec``s the JVM in place: the service's pid stays the one LocalService
started, and no shell script or daemon wrapper is involved. Flink's memory model is never re-implemented.

    python -m lakehouse_platform.runtime.bash_java_utils --java JAVA --classpath CP --conf-dir DIR \\
        --params GET_JM_RESOURCE_PARAMS [--mkdir DIR]... -- JAVA ... {jvm-params} ... MAIN ... {dynamic-params}
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

RESULT_PREFIX = "BASH_JAVA_UTILS_EXEC_RESULT:"
JVM_TOKEN = "{jvm-params}"  # noqa: S105 - a placeholder in argv, no credential
DYNAMIC_TOKEN = "{dynamic-params}"  # noqa: S105
MAIN_CLASS = "org.apache.flink.runtime.util.bash.BashJavaUtils"
TIMEOUT_S = 120.0


class LaunchError(RuntimeError):
    """BashJavaUtils did not give the two result lines (its output tells why)."""


def resource_params(java: str, classpath: str, conf_dir: str, command: str) -> tuple[list[str], list[str]]:
    """(JVM flags, ``-D`` dynamic properties) BashJavaUtils derives from the configuration."""
    done = subprocess.run([java, "-Xmx64m", "-cp", classpath, MAIN_CLASS, command, "--configDir", conf_dir],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    results = [line[len(RESULT_PREFIX):] for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or len(results) < 2:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise LaunchError(f"BashJavaUtils {command} exited {done.returncode} with {len(results)} result "
                          f"line(s):\n{tail}")
    return shlex.split(results[-2]), shlex.split(results[-1])


def splice(argv: list[str], jvm: list[str], dynamic: list[str]) -> list[str]:
    """``argv`` with the two tokens replaced by BashJavaUtils' results (each token must appear once)."""
    for token in (JVM_TOKEN, DYNAMIC_TOKEN):
        if argv.count(token) != 1:
            raise LaunchError(f"the command line must hold {token} exactly once")
    out: list[str] = []
    for arg in argv:
        out.extend(jvm if arg == JVM_TOKEN else dynamic if arg == DYNAMIC_TOKEN else [arg])
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print("usage: ... -- JAVA ARGS (see the module docstring)", file=sys.stderr)
        return 2
    split = args.index("--")
    parser = argparse.ArgumentParser(prog="python -m lakehouse_platform.runtime.bash_java_utils")
    parser.add_argument("--java", required=True)
    parser.add_argument("--classpath", required=True, help="bash-java-utils.jar, flink-dist and log4j")
    parser.add_argument("--conf-dir", required=True)
    parser.add_argument("--params", required=True, choices=("GET_JM_RESOURCE_PARAMS", "GET_TM_RESOURCE_PARAMS"))
    parser.add_argument("--mkdir", action="append", default=[], help="a directory to create first (repeatable)")
    options = parser.parse_args(args[:split])
    command = args[split + 1:]
    for directory in options.mkdir:
        Path(directory).mkdir(parents=True, exist_ok=True)
    try:
        jvm, dynamic = resource_params(options.java, options.classpath, options.conf_dir, options.params)
        final = splice(command, jvm, dynamic)
    except (LaunchError, subprocess.TimeoutExpired) as exc:
        print(f"flink launcher: {exc}", file=sys.stderr)
        return 1
    print(f"flink launcher: memory flags {' '.join(jvm)}", flush=True)
    os.execv(final[0], final)  # noqa: S606 - argv is ours; exec keeps the service's pid
    return 0  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
