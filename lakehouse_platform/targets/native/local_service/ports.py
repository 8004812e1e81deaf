"""Ports on 127.0.0.1: free or not, and who holds one (for an error that names the owner)."""

from __future__ import annotations

import shlex
import socket
from collections.abc import Sequence

import psutil

from lakehouse_platform.targets.native.local_service.errors import LocalServiceError
from lakehouse_platform.targets.native.local_service.inputs import LOOPBACK


def port_owner_pid(port: int, host: str = LOOPBACK) -> int | None:
    """Pid of the process listening on ``host:port``, or None if it cannot be told."""
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, PermissionError):
        return None
    for conn in conns:
        if not conn.laddr or conn.laddr.port != port or conn.status != psutil.CONN_LISTEN:
            continue
        if conn.laddr.ip in (host, "0.0.0.0", "::", "::ffff:" + host) and conn.pid:  # noqa: S104 - a listener, not a bind
            return conn.pid
    return None


def port_owner(port: int, host: str = LOOPBACK) -> str | None:
    """``"pid N cmd ..."`` of the process listening on ``port``, or None if it cannot be told."""
    pid = port_owner_pid(port, host)
    if pid is None:
        return None
    try:
        cmd = shlex.join(psutil.Process(pid).cmdline()) or psutil.Process(pid).name()
    except psutil.Error:
        cmd = "?"
    if len(cmd) > 200:
        cmd = cmd[:197] + "..."
    return f"pid {pid} cmd {cmd}"


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """True when a server could bind ``host:port`` now.

    SO_REUSEADDR like the services themselves use: without it, connections of the previous
    instance lingering in TIME_WAIT (e.g. our own health probes) would look like a busy port
    right after a restart, while only a real listener makes the bind fail.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def ensure_ports_free(service: str, ports: Sequence[int], host: str = LOOPBACK) -> None:
    """Raise ``LocalServiceError`` naming every port of ``service`` that is already taken."""
    busy = []
    for port in ports:
        if not port_is_free(port, host):
            owner = port_owner(port, host)
            who = f"by {owner}" if owner else f"owner unknown; try: ss -ltnp 'sport = :{port}'"
            busy.append(f"service '{service}': port {port} on {host} is already in use ({who})")
    if busy:
        raise LocalServiceError("\n".join(busy))
