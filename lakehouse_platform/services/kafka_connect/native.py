"""Kafka Connect natively: a distributed worker from the locked classpath, both plugins on its plugin path."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka_connect.config import CONNECT, LOG4J2, jvm_flags, secret_env, worker_properties
from lakehouse_platform.services.plans import NativeHost, NativePlan, properties


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``ConnectDistributed`` on loopback with both plugins; no local state (configs, offsets, status are topics).

    The worker properties file is the last argument on purpose: the Iceberg sink reads it back from
    ``sun.java.command`` for its control-topic clients (IcebergSinkConfig.loadWorkerProps).
    """
    assert host.artifact is not None and host.java_home is not None
    root = host.artifact.path
    config, log4j = host.home / "connect-distributed.properties", host.home / "log4j2.properties"
    java = str(host.java_home / "bin" / "java")
    return NativePlan(
        argv=[java, *jvm_flags(ctx), f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{root / 'libs'}/*",
              "org.apache.kafka.connect.cli.ConnectDistributed", str(config)],
        files={str(config): properties(worker_properties(ctx, str(root / "plugins"), "127.0.0.1")),
               str(log4j): LOG4J2},
        env={"JAVA_HOME": str(host.java_home), **secret_env(ctx)},
        health={"kind": "http", "url": ctx.url(CONNECT, "rest", path="/health"), "expect_status": 200},
        stop_grace_s=30.0,
    )


#: In the broker's home: the source connectors its drain stopped before it restarted, resumed once it runs again.
DRAINED = "connect-drained.json"


def broker_drain(ctx: ServiceContext, host: NativeHost, action: str) -> list[list[str]]:
    """Around the broker's restart (``ctx``, ``host``: the broker's), the source connectors stopped through this
    worker's REST API with their offsets committed, then resumed (``lakehouse_platform.services.kafka_connect.runtime``,
    run by the broker's Python on the operations runtime)."""
    return [[host.python, "-m", "lakehouse_platform.services.kafka_connect.runtime", action, ctx.url(CONNECT, "rest"),
             str(host.home / DRAINED), "60"]]
