"""The catalogs' and the store's job scripts, run for real against local stand-ins: what they share.

The Polaris catalog job and the Lakekeeper warehouse job are shell scripts calling the catalogs' management APIs
(lakehouse_platform/services/steps.py). A test runs the exact script a target renders under /bin/sh with curl against a small HTTP
server on 127.0.0.1 (``FakeApi``, started by the ``serve`` fixture of tests/conftest.py) whose ``route``
answers as the upstream API does (status codes and error types read in Polaris 1.7.0 and Lakekeeper v0.13.3).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lakehouse_platform.config import load_platform
from lakehouse_platform.services.context import ServiceContext
from tests.support.stacks import stack_platform

# Secrets with every character a shell or JSON could trip on.
ROOT_SECRET = 'r00t&secret="+ $HOME `x` \\'
S3_SECRET = 's3"secret\\with$chars'


@dataclass
class Answer:
    """What a stand-in API answers: a status and a JSON body (none for an empty answer)."""

    status: int
    body: Any = None


@dataclass
class FakeApi:
    """An HTTP server on 127.0.0.1 whose ``route`` decides every answer; records each request."""

    route: Callable[[str, str, dict[str, str], bytes], Answer]
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""


def run_script(script: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs a job's script under /bin/sh with ``env`` (and only PATH and HOME of this process's environment)."""
    base = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    return subprocess.run(["/bin/sh", "-c", script], env={**base, **env}, capture_output=True, text=True,
                          timeout=timeout, check=False)


def lab_ctx(name: str) -> ServiceContext:
    """The lab stack's context of the service (or job) ``name``."""
    return ServiceContext(load_platform(stack_platform("lab")), name)


def cloud_ctx(name: str) -> ServiceContext:
    """The cloud stack's context of the service (or job) ``name``."""
    return ServiceContext(load_platform(stack_platform("cloud")), name)


def filled(env: dict[str, str], **overrides: str) -> dict[str, str]:
    """A plan's environment as the container gets it (placeholders filled), with overrides."""
    values = {"${secret:polaris-root-secret}": ROOT_SECRET, "${secret:s3-access-key}": "lab-access-key",
              "${secret:s3-secret-key}": S3_SECRET}
    return {**{k: values.get(v, v) for k, v in env.items()}, **overrides}
