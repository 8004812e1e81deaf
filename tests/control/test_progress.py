"""A command's progress goes to stderr: its stdout is its answer (``lakehouse recovery restore`` prints JSON after a
deploy that shows progress; CI's probe failed on ``done pulumi up`` before the JSON)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_a_step_writes_its_progress_to_stderr_and_nothing_to_stdout():
    program = ("import json\n"
               "from lakehouse_platform.control.progress import step\n"
               "with step('pulumi up --stack verify') as detail:\n"
               "    detail('catalog')\n"
               "print(json.dumps({'answer': 1}))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == {"answer": 1}
    assert "pulumi up --stack verify" in done.stderr
