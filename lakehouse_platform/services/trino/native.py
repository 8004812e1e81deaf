"""Trino natively: the trino-server tarball's launcher on 127.0.0.1, its etc and data under the service's home."""

from __future__ import annotations

import resource

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import NativeHost, NativePlan, properties
from lakehouse_platform.services.trino.config import NAME, etc_files, heap_bytes, secret_env

# Trino demands at least 4096 open files (8192 recommended); natively the soft limit is raised to
# the hard limit, which even root may not raise on some hosts.
MIN_OPEN_FILES = 4096


def node_properties(data_dir: str) -> str:
    """Natively the HTTP server binds loopback only (node.bind-ip; Trino has no http host property)."""
    return properties({
        "node.environment": "lab", "node.id": "native-coordinator", "node.data-dir": data_dir,
        "node.bind-ip": "127.0.0.1", "node.internal-address": "127.0.0.1",
    })


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """`bin/launcher run` execs the JVM itself: one pid to stop, no orphans. Never `-v` (prints env)."""
    assert host.artifact is not None and host.java_home is not None
    port = ctx.listen_port("http")
    etc, data = host.home / "etc", host.home / "data"
    files = etc_files(ctx, str(etc), "single", f"http://127.0.0.1:{port}", heap_bytes(ctx))
    files.update({str(etc / "node.properties"): node_properties(str(data)),
                  str(etc / "log.properties"): "io.trino=INFO\n"})
    hard_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return NativePlan(
        argv=[str(host.artifact.path / "bin" / "launcher"), "run", f"--etc-dir={etc}", f"--data-dir={data}"],
        env={**secret_env(ctx), "JAVA_HOME": str(host.java_home)},
        files=files,
        health={"kind": "http", "url": ctx.url(NAME, "http", path="/v1/info"), "expect_status": 200,
                "json_field": "starting", "json_expect": False},
        ulimit_nofile=max(MIN_OPEN_FILES, min(hard_limit, 65536)),
        stop_grace_s=20.0,
    )
