"""A native service's log kept bounded by its watchdog, for real: a child process writing fast, rotated under it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from lakehouse_platform.runtime import watchdog

MIB = 1024 * 1024
# Writes 4000 numbered lines of 1 KiB (about 4 MiB) a little at a time, then exits.
WRITER = ("import sys, time\n"
          "for i in range(4000):\n"
          "    sys.stdout.write(f'{i:06d} ' + 'x' * 1017 + '\\n'); sys.stdout.flush()\n"
          "    time.sleep(0.0005)\n")


def _config(tmp_path: Path, keep: int) -> dict:
    return {"argv": [sys.executable, "-c", WRITER], "cwd": str(tmp_path), "log_file": str(tmp_path / "svc.log"),
            "data_dir": str(tmp_path), "restart": {"max_restarts": 0, "window_s": 60, "backoff_initial_s": 1,
                                                   "backoff_max_s": 1},
            "log_rotation": {"max_bytes": MIB, "keep": keep}}


def _numbers(path: Path) -> list[int]:
    return [int(line[:6]) for line in path.read_text().splitlines() if line[:6].isdigit()]


def test_a_log_past_its_size_is_copied_aside_and_emptied_under_the_running_service(tmp_path: Path) -> None:
    dog = watchdog.Watchdog(_config(tmp_path, keep=2))
    dog.start_child()
    assert dog.child is not None
    rotations = 0
    while dog.child.poll() is None:
        rotations += dog.rotate_log()
        time.sleep(0.05)
    log = tmp_path / "svc.log"
    rotations += dog.rotate_log()
    assert rotations >= 3  # about 4 MiB through a 1 MiB log
    # Two older files kept, the oldest deleted; the live file emptied in place, so the service wrote on into it
    # from its start (append mode: no hole of NUL bytes where the old content was).
    assert sorted(p.name for p in tmp_path.glob("svc.log*")) == ["svc.log", "svc.log.1", "svc.log.2"]
    assert "\0" not in log.read_text()
    newest, older, oldest = _numbers(log), _numbers(tmp_path / "svc.log.1"), _numbers(tmp_path / "svc.log.2")
    assert newest[-1] == 3999, "the service's last line is in the live log"
    for rotated in (older, oldest):
        assert rotated == list(range(rotated[0], rotated[0] + len(rotated))), "each file holds one run of lines"
    assert oldest[-1] < older[0] and older[-1] < (newest[0] if newest else 4000)
    assert log.stat().st_size <= MIB + 64 * 1024 and (tmp_path / "svc.log.1").stat().st_size <= 2 * MIB
    assert "log rotated: past 1048576 bytes, 2 older file(s) kept" in (tmp_path / "svc.log.1").read_text() + \
        log.read_text() + (tmp_path / "svc.log.2").read_text()


def test_with_nothing_kept_the_log_is_only_emptied(tmp_path: Path) -> None:
    dog = watchdog.Watchdog(_config(tmp_path, keep=0))
    dog.start_child()
    assert dog.child is not None
    while dog.child.poll() is None:
        dog.rotate_log()
        time.sleep(0.05)
    dog.rotate_log()
    assert [p.name for p in tmp_path.glob("svc.log*")] == ["svc.log"]
    assert (tmp_path / "svc.log").stat().st_size <= MIB + 64 * 1024
