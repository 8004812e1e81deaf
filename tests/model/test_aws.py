"""The ``aws`` section of the spec (lakehouse_platform/model/aws.py): a malformed cloud config fails with a clear message naming the
key, what aws cannot run is refused with its reason, the storage region follows the aws region."""

from __future__ import annotations

from typing import Any

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from tests.support.stacks import cloud_platform


def config_errors(platform: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_platform(platform, source="Pulumi.cloud.yaml")
    return caught.value.errors


def test_the_rest_fixture_is_refused_on_aws() -> None:
    platform = cloud_platform()
    platform["services"]["rest-fixture"]["enabled"] = True
    platform["services"]["seaweedfs"]["enabled"] = True  # its store, so the fixture's own refusal is what fails
    allowed = ("disable it. Allowed on aws: postgres, polaris, trino, lakehouse-exporter, prometheus, "
               "flink-jobmanager, maintenance-scheduler, catalog-backup")
    assert config_errors(platform) == [
        f"lakehouse:platform.services.seaweedfs.enabled: seaweedfs does not run on the aws target (on aws the store "
        f"is S3 itself); {allowed}",
        f"lakehouse:platform.services.rest-fixture.enabled: rest-fixture does not run on the aws target (the REST "
        f"fixture is a test server with SQLite behind it; use polaris); {allowed}",
    ]


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p["aws"].update(region="mars-north-1"),
     "lakehouse:platform.aws.region: 'mars-north-1' is not an AWS region; use a region code such as eu-west-1 "
     "or us-east-1"),
    (lambda p: p["aws"].update(trino_workers=0),
     "lakehouse:platform.aws.trino_workers: 0 workers cannot run a query: the coordinator only plans; "
     "set at least 1 Trino worker"),
    (lambda p: p["layers"]["compute"].update(owner=" "),
     "lakehouse:platform.layers.compute.owner: every layer needs an owner: name the team that answers for it"),
    (lambda p: p["aws"].update(kafka_msk=True, msk_broker_count=3),
     "lakehouse:platform.aws.msk_broker_count: 3 brokers cannot spread evenly over 2 availability zones; "
     "use a multiple of 2"),
    (lambda p: p["aws"].update(vpc_cidr="8.8.0.0/16"),
     "lakehouse:platform.aws.vpc_cidr: '8.8.0.0/16' must be a private IPv4 network from /16 to /22 "
     "(an eighth of it per subnet, per AZ)"),
    (lambda p: p["aws"].update(trino_worker_cpu=2048, trino_worker_memory_mb=2048),
     "lakehouse:platform.aws.trino_worker_memory_mb: 2048 does not fit 2048 CPU units on Fargate; "
     "allowed: 4096 to 16384 in steps of 1024"),
    (lambda p: p["aws"].update(trino_worker_cpu=3000),
     "lakehouse:platform.aws.trino_worker_cpu: 3000 is not a Fargate CPU size; allowed: 256, 512, 1024, 2048, "
     "4096, 8192, 16384"),
    (lambda p: p["storage"].update(region="us-east-1"),
     "lakehouse:platform.storage.region: 'us-east-1' differs from aws.region 'eu-west-1'; on aws the bucket lives "
     "in aws.region, so leave storage.region unset or make them equal"),
    (lambda p: p["services"]["kafka"].update(enabled=True),
     "lakehouse:platform.services.kafka.enabled: kafka does not run on the aws target (on aws Kafka runs as "
     "Amazon MSK: set aws.kafka_msk: true instead); disable it. Allowed on aws: postgres, polaris, trino, "
     "lakehouse-exporter, prometheus, flink-jobmanager, maintenance-scheduler, catalog-backup"),
    (lambda p: p["aws"].update(log_retention_days=10),
     "lakehouse:platform.aws.log_retention_days: 10 is not a CloudWatch retention; allowed: 1, 3, 5, 7, 14, 30, "
     "60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653"),
    (lambda p: p["services"].update(trino={"enabled": False}),
     "lakehouse:platform.maintenance: on aws maintenance runs through Trino (its Iceberg procedures, from "
     "EventBridge's maintenance tasks); "
     "enable services.trino or remove maintenance"),
    (lambda p: p["maintenance"].append({"action": "rewrite_manifests", "schedule": "0 5 1 * 1"}),
     "lakehouse:platform.maintenance.2.schedule: '0 5 1 * 1' restricts both the day of month and the day of week "
     "(cron fires when either matches); EventBridge Scheduler accepts only one of them: set the other to *, or "
     "declare two jobs"),
])
def test_malformed_cloud_configs_fail_with_clear_messages(change: Any, message: str) -> None:
    platform = cloud_platform()
    change(platform)
    assert config_errors(platform) == [message]


def test_storage_region_follows_the_aws_region() -> None:
    assert load_platform(cloud_platform()).storage.region == "eu-west-1"
    platform = cloud_platform()
    platform["aws"]["region"] = "us-west-2"
    assert load_platform(platform).storage.region == "us-west-2"
