"""moto in server mode on a loopback port: the AWS APIs the project's own code calls, answered here.

``moto_server`` (PyPI ``moto[server]``) runs as its own process, bound to 127.0.0.1 on a free port,
and is stopped by its pid when the test module ends. With ``tls=True`` it serves HTTPS with a
certificate the platform's own issuer makes for 127.0.0.1 (``lakehouse_platform.resources.certificate.issue``),
and clients verify it through ``AWS_CA_BUNDLE``: every client the project builds (boto3, the AWS
CLI) reaches it over TLS with verification on, the transport the warehouse bucket's policy admits.

``client_env`` is what a process needs to talk to it and nothing else: ``AWS_ENDPOINT_URL`` (honoured
by boto3 and the AWS CLI for every service, so the project's clients, which name no endpoint on aws,
reach the emulator unchanged), dummy credentials, the stack's region, and no profile or config
file of the developer's.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

START_WAIT_S = 30.0  # moto_server answers in 1-2 s here; a slow machine gets room, a broken one an error
STOP_WAIT_S = 10.0


@dataclass(frozen=True)
class MotoServer:
    """One running moto server: where it answers and how to verify it."""

    endpoint: str
    ca_bundle: str | None
    pid: int
    log: Path

    def client_env(self, region: str) -> dict[str, str]:
        """The environment a client process needs for this server (see module docstring)."""
        env = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": region,
            "AWS_REGION": region,
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        if self.ca_bundle:
            env["AWS_CA_BUNDLE"] = self.ca_bundle
        return env

    def api(self, path: str, payload: dict[str, object]) -> None:
        """POST to moto's own control API (``/moto-api/...``): state transitions, resets."""
        response = requests.post(f"{self.endpoint}/moto-api/{path}", json=payload, timeout=10,
                                 verify=self.ca_bundle or True)
        response.raise_for_status()

    def ecs_tasks_stop(self, immediately: bool) -> None:
        """How fast an ECS task moves from RUNNING to STOPPED: on its first read, or one state per read
        (RUNNING, DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED: moto's default)."""
        transition = {"progression": "immediate"} if immediately else {"progression": "manual", "times": 1}
        self.api("state-manager/set-transition", {"model_name": "ecs::task", "transition": transition})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _issue_certificate(workdir: Path) -> tuple[Path, Path]:
    from lakehouse_platform.resources.certificate import issue

    issued = issue("127.0.0.1", ["127.0.0.1", "localhost"], days=1)
    cert, key = workdir / "moto-cert.pem", workdir / "moto-key.pem"
    cert.write_text(issued["cert_pem"])
    key.write_text(issued["key_pem"])
    key.chmod(0o600)
    return cert, key


@contextmanager
def moto_server(workdir: Path, *, tls: bool) -> Iterator[MotoServer]:
    """A moto server for the block's duration; its log in ``workdir``; stopped by its pid at the end."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    command = [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)]
    ca_bundle = None
    if tls:
        cert, key = _issue_certificate(workdir)
        command += ["--ssl-cert", str(cert), "--ssl-key", str(key)]
        ca_bundle = str(cert)
    endpoint = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    log = workdir / f"moto-{port}.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=workdir)
    server = MotoServer(endpoint, ca_bundle, process.pid, log)
    try:
        deadline = time.monotonic() + START_WAIT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                requests.get(f"{endpoint}/moto-api/", timeout=1, verify=ca_bundle or True).raise_for_status()
                break
            except requests.RequestException:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not answer on {endpoint} within {START_WAIT_S:g} s: "
                                       f"{log.read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_WAIT_S)
