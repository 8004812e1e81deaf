"""A container registry on a loopback port: Debian's ``docker-registry`` (the distribution registry, 2.8), with
basic authentication, for pushing images the way the cloud pushes to ECR without any outside registry.

``local_registry`` writes the registry's config (``127.0.0.1:<free port>``, a storage directory and an htpasswd
file of its own in ``workdir``), runs ``/usr/bin/docker-registry serve`` as a process of its own and stops it by
its pid when the block ends. The Docker engine treats ``127.0.0.0/8`` registries as insecure ones it may reach
over plain HTTP, so the engine the project already uses pushes to it without TLS or configuration.

``manifest`` reads a tag's manifest back through the registry's HTTP API (what a pull of it resolves to).
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

BINARY = "/usr/bin/docker-registry"
START_WAIT_S = 20.0
MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"


@dataclass(frozen=True)
class LocalRegistry:
    """One running registry: where it answers, its one user, its process."""

    host: str  # 127.0.0.1:<port>: the registry part of an image reference
    username: str
    password: str
    pid: int
    log: Path

    @property
    def credentials(self) -> dict[str, str]:
        """What ``PushedImage`` takes as ``registry`` (the shape aws.ecr.get_authorization_token gives)."""
        return {"server": self.host, "username": self.username, "password": self.password}

    def manifest(self, repository: str, reference: str, *, auth: bool = True) -> requests.Response:
        """``GET /v2/<repository>/manifests/<reference>`` (a tag or a digest), as a v2 manifest."""
        return requests.get(f"http://{self.host}/v2/{repository}/manifests/{reference}",
                            headers={"Accept": MANIFEST_V2}, auth=(self.username, self.password) if auth else None,
                            timeout=10)

    def blob(self, repository: str, digest: str) -> bytes:
        response = requests.get(f"http://{self.host}/v2/{repository}/blobs/{digest}",
                                auth=(self.username, self.password), timeout=30)
        response.raise_for_status()
        assert hashlib.sha256(response.content).hexdigest() == digest.removeprefix("sha256:")
        return response.content


def bcrypt(password: str) -> str:
    """A bcrypt hash, the only kind the registry's htpasswd accepts: the C library's, through Python 3.11's ``crypt``
    (deprecated, and gone in 3.13; the project runs 3.11)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))  # noqa: S324 - bcrypt is what it reads


def installed() -> bool:
    return shutil.which(BINARY) is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def local_registry(workdir: Path) -> Iterator[LocalRegistry]:
    """A registry for the block's duration (module docstring); its log in ``workdir``; stopped by its pid."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    username, password = "pusher", secrets.token_hex(16)
    (workdir / "htpasswd").write_text(f"{username}:{bcrypt(password)}\n")
    (workdir / "config.yml").write_text(
        "version: 0.1\n"
        "log: {level: warn}\n"
        f"storage: {{filesystem: {{rootdirectory: {workdir / 'data'}}}, delete: {{enabled: false}}}}\n"
        f"http: {{addr: '127.0.0.1:{port}', secret: {secrets.token_hex(16)}}}\n"
        f"auth: {{htpasswd: {{realm: lakehouse-test, path: {workdir / 'htpasswd'}}}}}\n")
    log = workdir / "registry.log"
    with log.open("w") as out:
        process = subprocess.Popen([BINARY, "serve", str(workdir / "config.yml")], stdout=out,
                                   stderr=subprocess.STDOUT, cwd=workdir)
    running = LocalRegistry(f"127.0.0.1:{port}", username, password, process.pid, log)
    try:
        deadline = time.monotonic() + START_WAIT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"docker-registry exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if requests.get(f"http://{running.host}/v2/", timeout=1).status_code == 401:
                    break  # it answers, and asks for credentials
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"docker-registry did not answer on {running.host} within {START_WAIT_S:g} s: "
                                   f"{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield running
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
