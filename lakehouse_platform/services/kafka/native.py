"""Kafka natively: the broker + controller from the locked classpath on 127.0.0.1; topics made after start."""

from __future__ import annotations

from lakehouse_platform.services.capabilities import BROKER
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka.config import (
    KAFKA,
    LOG4J2,
    broker_properties,
    cluster_id,
    jvm_flags,
    topics_json,
)
from lakehouse_platform.services.plans import NativeHost, NativePlan, properties
from lakehouse_platform.services.registry import registry


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``kafka.Kafka`` on loopback; the log directory is formatted once (setup), topics after every start."""
    assert host.artifact is not None and host.java_home is not None and host.state_dir is not None
    home = host.home
    config, log4j = home / "server.properties", home / "log4j2.properties"
    data = home / "data"
    java = str(host.java_home / "bin" / "java")
    classpath = f"{host.artifact.path}/*"  # java expands the wildcard itself (no shell in between)
    logging = f"-Dlog4j2.configurationFile={log4j}"
    return NativePlan(
        argv=[java, *jvm_flags(ctx), logging, "-cp", classpath, "kafka.Kafka", str(config)],
        files={str(config): properties(broker_properties(ctx, "127.0.0.1", str(data))), str(log4j): LOG4J2},
        env={"JAVA_HOME": str(host.java_home), "PYTHONPATH": str(host.code_root)},
        # --ignore-formatted: an already formatted directory is fine (the marker normally skips this step).
        setup=[[java, "-Xmx256m", logging, "-cp", classpath, "kafka.tools.StorageTool", "format", "--ignore-formatted",
                "--cluster-id", cluster_id(ctx.spec, host.state_dir.name), "--config", str(config)]],
        post_start=[[host.python, "-m", "lakehouse_platform.runtime.tasks", "create-topics",
                     "--bootstrap", ctx.address(KAFKA, "broker"), "--topics", topics_json(ctx.spec)],
                    *_drains(ctx, host, "resume")],
        pre_stop=_drains(ctx, host, "stop"),
        # host given: LocalService echoes health with its defaults filled in, and a missing default would diff.
        health={"kind": "tcp", "host": "127.0.0.1", "port": ctx.listen_port("broker")},
        stop_grace_s=30.0,
    )


def _drains(ctx: ServiceContext, host: NativeHost, action: str) -> list[list[str]]:
    """Around the broker's restart for an update, what the stack's services ask of it (``RestartDrain``): the
    change capture's source connectors stopped with their offsets committed before it stops, resumed after."""
    return [command for drain in registry().drains_around(ctx.spec, BROKER)
            for command in drain.commands(ctx, host, action)]
