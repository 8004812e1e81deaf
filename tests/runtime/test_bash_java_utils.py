"""The native launcher of Flink's processes (lakehouse_platform/runtime/bash_java_utils.py): it splices what Flink's
BashJavaUtils computes into the command and execs it, and reports BashJavaUtils' failure; against a stand-in java."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lakehouse_platform.runtime import bash_java_utils as bju

PY = sys.executable


def test_launcher_splices_bash_java_utils_results_and_execs(tmp_path):
    fake_java = tmp_path / "java"
    fake_java.write_text("#!/bin/sh\necho 'log line'\necho 'BASH_JAVA_UTILS_EXEC_RESULT:-Xmx100 -Xms100'\n"
                         "echo 'BASH_JAVA_UTILS_EXEC_RESULT:-D a=1b -D b=2'\n")
    fake_java.chmod(0o755)
    made = tmp_path / "made" / "deep"
    done = subprocess.run([PY, "-m", "lakehouse_platform.runtime.bash_java_utils", "--java", str(fake_java),
                           "--classpath", "x.jar", "--conf-dir", str(tmp_path), "--params", "GET_TM_RESOURCE_PARAMS",
                           "--mkdir", str(made), "--", "/bin/echo", "JVM", "{jvm-params}", "Main",
                           "{dynamic-params}"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "JVM -Xmx100 -Xms100 Main -D a=1b -D b=2"
    assert made.is_dir()
    assert bju.splice(["a", "{jvm-params}", "{dynamic-params}"], ["-X"], []) == ["a", "-X"]
    with pytest.raises(bju.LaunchError):
        bju.splice(["a"], [], [])


def test_launcher_reports_bash_java_utils_failure(tmp_path):
    fake_java = tmp_path / "java"
    fake_java.write_text("#!/bin/sh\necho 'IllegalConfigurationException: bad memory' >&2\nexit 1\n")
    fake_java.chmod(0o755)
    done = subprocess.run([PY, "-m", "lakehouse_platform.runtime.bash_java_utils", "--java", str(fake_java),
                           "--classpath", "x", "--conf-dir", "/c", "--params", "GET_JM_RESOURCE_PARAMS", "--",
                           "/bin/echo", "{jvm-params}", "{dynamic-params}"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 1 and "IllegalConfigurationException: bad memory" in done.stderr
