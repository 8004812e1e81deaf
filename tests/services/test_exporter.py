"""The metrics exporter as each target runs it, under Pulumi mocks: on docker built from the repository and reading as the
reader; on aws a Fargate service beside a Prometheus agent writing the managed workspace. (Its code:
tests/runtime/test_exporter.py.)"""

from __future__ import annotations

import base64
import json
import re

import yaml

from lakehouse_platform.version import PLATFORM_VERSION
from tests.support.aws_graph import policy
from tests.support.rendered import reveal, uploads


def test_lab_exporter_is_built_from_the_repository_and_reads_as_the_reader(lab):
    image = lab.named("operations-image")  # the one operations image (exporter, gate, scheduler, backups)
    assert image.type == "docker:index/image:Image"
    assert image.inputs["build"]["dockerfile"].endswith("lakehouse_platform/runtime/image/Dockerfile")
    assert image.inputs["imageName"] == f"lakehouse/operations:{PLATFORM_VERSION}" and image.inputs["skipPush"] is True
    container = lab.named("lakehouse-exporter")
    config = json.loads(uploads(lab, "lakehouse-exporter")["/etc/lakehouse/exporter.json"])
    assert config["catalog"]["s3.access-key-id"] == "reader-access-key"
    assert config["catalog"]["token"] == "${ENV:CATALOG_TOKEN}" and "lab-" not in json.dumps(config)
    envs = reveal(container.inputs["envs"])
    assert "CATALOG_TOKEN=lab-reader-catalog-token" in envs and "S3_SECRET_KEY=reader-secret-key" in envs


def test_cloud_exporter_runs_as_the_reader_beside_an_agent_writing_the_workspace(cloud):
    task = next(t for t in cloud.of_type("aws:ecs/taskDefinition:TaskDefinition") if t.name == "lakehouse-lakehouse-exporter")
    assert task.inputs["taskRoleArn"].endswith("lakehouse-identity-reader")
    containers = {c["name"]: c for c in json.loads(task.inputs["containerDefinitions"])}
    assert set(containers) == {"lakehouse-exporter", "prometheus-agent"}
    assert containers["prometheus-agent"]["image"] == "prom/prometheus:v2.55.1"
    script = containers["prometheus-agent"]["command"][0]
    agent = yaml.safe_load(base64.b64decode(re.search(r"echo (\S+) \| base64 -d > /etc/prometheus/agent.yml",
                                                      script).group(1)))
    assert agent["scrape_configs"][0]["static_configs"][0]["targets"] == ["localhost:9464"]
    assert agent["remote_write"][0]["sigv4"] == {"region": "eu-west-1"}
    assert "--agent" in script
    grant = policy(cloud, "lakehouse-exporter-remote-write")["Statement"][0]
    assert grant["Action"] == ["aps:RemoteWrite"] and grant["Resource"].endswith("lakehouse-signals")
    # The reader's own Polaris client secret: the read-only exporter never holds Polaris's root.
    assert {s["name"] for s in containers["lakehouse-exporter"]["secrets"]} == {"CATALOG_CLIENT_SECRET"}


def test_a_tables_retention_is_its_expiry_where_a_job_covers_it_else_the_stacks_default() -> None:
    """What SnapshotsGrowingWithoutExpiry measures the oldest snapshot against (the exporter's ``retention_s``)."""
    from lakehouse_platform.config import load_platform
    from lakehouse_platform.services.exporter.config import retention_s
    from tests.support.stacks import stack_platform

    platform = stack_platform("native")
    covered = load_platform(platform)
    bounds = covered.table_bounds(flink_job=True)
    assert bounds["streams.orders"].expiry_gap_s == 15 * 60
    assert retention_s(covered, bounds["streams.orders"]) == bounds["streams.orders"].max_age_s
    platform["maintenance"] = [job for job in platform["maintenance"] if job["action"] != "expire_snapshots"]
    platform.setdefault("observability", {})["snapshot_retention_days"] = 30  # not the retention's own age
    uncovered = load_platform(platform)
    found = uncovered.table_bounds()["*"]
    assert found.expiry_gap_s is None
    assert retention_s(uncovered, found) == uncovered.observability.snapshot_retention_days * 86400.0
