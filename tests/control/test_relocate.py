"""Moving a native stack's data to where this release keeps it (lakehouse_platform/control/relocate.py), on real processes."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import psutil
import pytest

from lakehouse_platform.control import relocate
from lakehouse_platform.model import Target
from lakehouse_platform.targets import state_move
from lakehouse_platform.targets.native import local_service as ls


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_move_tree_renames_and_refuses_a_place_that_holds_data(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "deep" / "new"
    (old / "postgres").mkdir(parents=True)
    (old / "postgres" / "PG_VERSION").write_text("18\n")
    state_move.move_tree(old, new)
    assert not old.exists() and (new / "postgres" / "PG_VERSION").read_text() == "18\n"
    (old / "x").mkdir(parents=True)
    with pytest.raises(relocate.RelocationRefused, match="already holds data"):
        state_move.move_tree(old, new)


def test_across_filesystems_the_copy_keeps_owners_and_modes(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    (old / "postgres").mkdir(parents=True)
    data = old / "postgres" / "PG_VERSION"
    data.write_text("18\n")
    os.chmod(old / "postgres", 0o700)
    if os.geteuid() == 0:
        os.chown(old / "postgres", 65534, 65534)
        os.chown(data, 65534, 65534)
    exdev = OSError(18, "Invalid cross-device link")
    with mock.patch.object(state_move.os, "rename", side_effect=exdev):
        state_move.move_tree(old, new)
    assert not old.exists() and (new / "postgres" / "PG_VERSION").read_text() == "18\n"
    assert (new / "postgres").stat().st_mode & 0o777 == 0o700
    if os.geteuid() == 0:
        assert (new / "postgres").stat().st_uid == 65534 and (new / "postgres" / "PG_VERSION").stat().st_uid == 65534


def test_relocate_stops_the_stack_by_its_pids_then_moves_its_whole_directory(tmp_path: Path) -> None:
    old, new = tmp_path / "checkout" / ".state" / "native", tmp_path / "state-root" / "native"
    port = _free_port()
    spec = ls.ServiceInputs.from_props({
        "service": "web", "argv": [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        "cwd": str(old / "web"), "data_dir": str(old / "web"), "log_file": str(old / "logs" / "web.log"),
        "health": {"kind": "tcp", "host": "127.0.0.1", "port": port}, "ports": [port], "health_timeout_s": 20,
        "stop_grace_s": 2})
    (old / "backups").mkdir(parents=True)
    (old / "backups" / "catalog.dump").write_text("a backup")
    record = ls.start_service(spec)
    try:
        deployed = {"target": "native", "native": {"state_dir": str(old), "services": {"web": {"pid": record.pid,
                                                                                                 "data_dir": str(old / "web")}}}}
        said: list[str] = []
        with mock.patch.object(relocate, "load_stack",
                               return_value=SimpleNamespace(target=Target.NATIVE, state_dir=str(new))):
            assert relocate.relocate("native", deployed, said.append) == new
        assert not psutil.pid_exists(record.pid) or psutil.Process(record.pid).status() == psutil.STATUS_ZOMBIE
        assert not old.exists() and (new / "backups" / "catalog.dump").read_text() == "a backup"
        assert (new / "web" / ls.PID_FILE_NAME).exists() and "moving stack native's data" in said[0]
        with mock.patch.object(relocate, "load_stack",
                               return_value=SimpleNamespace(target=Target.NATIVE, state_dir=str(new))):
            assert relocate.relocate("native", {"native": {"state_dir": str(new)}}) is None, "nothing to move"
    finally:
        ls.stop_service(spec, record)
