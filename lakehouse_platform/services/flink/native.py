"""Flink natively: one java process per manager, started the way Flink's scripts start them (memory flags from
``BashJavaUtils``), from the distribution PyPI serves plus the locked jars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.flink.artifact import DIST_JAR, UTILS_JAR
from lakehouse_platform.services.flink.config import (
    ENTRYPOINTS,
    JAVA17_OPTS,
    JOB,
    JOBMANAGER,
    LOG4J_CONSOLE,
    RESOURCE_PARAMS,
    aws_env,
    flink_config,
    lineage,
)
from lakehouse_platform.services.plans import NativeHost, NativePlan


def native_state_dir(state_dir: Path) -> Path:
    """Checkpoints and savepoints of the native cluster: under the job manager's home, shared by both."""
    return state_dir / JOBMANAGER / "state"


def native_classpath(ctx: ServiceContext, artifact: Artifact) -> list[str]:
    """The cluster classpath the artifact recorded (the Kafka source's jars included: either source runs)."""
    return [str(p) for p in artifact.classpath]


def _native(ctx: ServiceContext, host: NativeHost, role: str) -> NativePlan:
    """One java process, launched like Flink's scripts do: BashJavaUtils computes the JVM's memory flags."""
    assert host.artifact is not None and host.java_home is not None and host.state_dir is not None
    home, conf = host.home, host.home / "conf"
    state = native_state_dir(host.state_dir)
    config = flink_config(ctx, role, f"file://{state}", "127.0.0.1", "127.0.0.1", "127.0.0.1")
    config.update({"io.tmp.dirs": str(home / "tmp")})
    if role == "jobmanager":
        config.update({"web.tmpdir": str(home / "web-tmp"), "web.upload.dir": str(home / "web-upload")})
    java_bin = str(host.java_home / "bin" / "java")
    dist = host.artifact.path
    utils_cp = ":".join(str(p) for p in (dist / UTILS_JAR, *host.artifact.classpath)
                        if p.name.startswith(("bash-java-utils", DIST_JAR, "log4j-")))
    dirs = [home / "tmp", home / "plugins", state / "checkpoints", state / "savepoints"]
    if role == "jobmanager":
        dirs += [home / "web-tmp", home / "web-upload"]
    argv = [host.python, "-m", "lakehouse_platform.runtime.bash_java_utils", "--java", java_bin,
            "--classpath", utils_cp, "--conf-dir", str(conf), "--params", RESOURCE_PARAMS[role],
            *(arg for d in dirs for arg in ("--mkdir", str(d))), "--",
            java_bin, "-XX:+IgnoreUnrecognizedVMOptions", "-XX:+ExitOnOutOfMemoryError", *JAVA17_OPTS,
            f"-Dlog4j.configurationFile=file:{conf / 'log4j-console.properties'}", "{jvm-params}",
            "-classpath", ":".join(native_classpath(ctx, host.artifact)), ENTRYPOINTS[role], "--configDir", str(conf),
            *(["--executionMode", "cluster"] if role == "jobmanager" else []), "{dynamic-params}"]
    if role == "jobmanager":
        health: dict[str, Any] = {"kind": "http", "url": ctx.url(JOBMANAGER, "rest", path="/overview"),
                                  "expect_status": 200}
    else:  # its RPC endpoint; registration follows, and the job waits for its slots (FlinkJob: every task RUNNING)
        # host given although it is LocalService's default: the recorded check must equal the input, or every
        # `pulumi up` would see a change and restart the task manager.
        health = {"kind": "tcp", "host": "127.0.0.1", "port": ctx.listen_port("rpc")}
    return NativePlan(
        argv=argv,
        env={**aws_env(ctx.spec), "JAVA_HOME": str(host.java_home), "PYTHONPATH": str(host.code_root),
             "FLINK_CONF_DIR": str(conf), "FLINK_PLUGINS_DIR": str(home / "plugins")},
        files={str(conf / "config.yaml"): yaml.safe_dump(config, sort_keys=False),
               str(conf / "log4j-console.properties"): LOG4J_CONSOLE},
        health=health,
        stop_grace_s=30.0,
        pre_stop=_drain(ctx, host, state),
    )


def _drain(ctx: ServiceContext, host: NativeHost, state: Path) -> list[list[str]]:
    """Before either manager stops for an update: the job stopped with a savepoint (``services.flink.runtime``)."""
    if JOB not in ctx.spec.enabled_services():
        return []
    return [[host.python, "-m", "lakehouse_platform.services.flink.runtime", ctx.url(JOBMANAGER, "rest"),
             ctx.spec.flink.job.name,
             f"file://{state}/savepoints/{lineage(ctx.spec)}", "120"]]


def jobmanager(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    return _native(ctx, host, "jobmanager")


def taskmanager(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    return _native(ctx, host, "taskmanager")
