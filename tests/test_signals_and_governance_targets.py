"""Signals and governance on the docker and aws targets, under Pulumi mocks (no Docker engine, no AWS account here):
the resource graphs, checked for what they promise."""

from __future__ import annotations

import base64
import json
import re

import pytest
import yaml

from infra.config import load_platform
from infra.operations.alerts import rules_yaml
from infra.services import exporter
from tests.support.harness import cached_run
from tests.support.stacks import stack_platform

CONTAINER = "docker:index/container:Container"
SECRET_KEY = "4dabf18193072939515e22adb298388d"


def reveal(value):
    if isinstance(value, dict) and SECRET_KEY in value:
        return reveal(value["value"])
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal(v) for v in value]
    return value


@pytest.fixture(scope="module")
def lab():
    return cached_run("lab", stack_platform("lab"))


@pytest.fixture(scope="module")
def cloud():
    from tests.support.stacks import cloud_platform

    return cached_run("cloud", cloud_platform())


def uploads(run, name: str) -> dict[str, str]:
    return {u["file"]: u.get("content") or u.get("source") for u in reveal(run.named(name).inputs["uploads"])}


# -- docker --------------------------------------------------------------------------------------------


def test_lab_gate_holds_token_hashes_and_clients_reach_the_fixture_only_through_it(lab):
    config = json.loads(uploads(lab, "catalog-gate")["/etc/lakehouse/catalog-gate.json"])
    assert config["upstream"] == "http://rest-fixture:8181"
    assert {i["name"]: i["role"] for i in config["identities"]} == {"platform": "platform", "writer": "writer",
                                                                     "reader": "reader"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", i["token_sha256"]) for i in config["identities"])
    text = json.dumps(config)
    assert "lab-reader-catalog-token" not in text and "lab-writer-catalog-token" not in text
    host = lab.outputs["profiles"]["host"]
    assert host["pyiceberg"]["uri"] == "http://localhost:8182"
    assert "8181" not in json.dumps(host)


def test_lab_gate_runs_in_the_operations_image_with_its_signing_key_only_in_its_environment(lab):
    image = lab.named("operations-image")  # the one operations image, built once for every operations container
    assert image.inputs["build"]["dockerfile"].endswith("docker/operations.Dockerfile")
    assert image.inputs["imageName"] == "lakehouse/operations:0.3.0"
    container = lab.named("catalog-gate")
    assert container.inputs["command"] == ["python", "-m", "infra.operations.catalog_gate", "--config",
                                           "/etc/lakehouse/catalog-gate.json"]
    assert "CATALOG_GATE_SIGNING_KEY=lab-catalog-gate-access-token-signing-key" in reveal(container.inputs["envs"])
    assert "signing" not in json.dumps(reveal(container.inputs["uploads"]))
    assert SECRET_KEY in json.dumps(container.inputs["envs"]), "the key is a Pulumi secret"


def test_lab_prometheus_loads_the_rules_the_spec_declares_and_scrapes_the_exporter(lab):
    spec = load_platform(stack_platform("lab"))
    files = uploads(lab, "prometheus")
    assert files["/etc/prometheus/rules.yml"] == rules_yaml(spec)
    scrape = yaml.safe_load(files["/etc/prometheus/prometheus.yml"])
    targets = {job["job_name"]: job["static_configs"][0]["targets"] for job in scrape["scrape_configs"]}
    assert targets["lakehouse-exporter"] == ["lakehouse-exporter:9464"]
    assert targets["catalog-gate"] == ["catalog-gate:8182"]
    assert lab.named("prometheus").inputs["image"] == "sha256:prometheus-image"  # pulled: prom/prometheus pinned
    assert lab.named("prometheus-image").inputs["name"] == "prom/prometheus:v2.55.1"


def test_lab_exporter_is_built_from_the_repository_and_reads_as_the_reader(lab):
    image = lab.named("operations-image")  # the one operations image (exporter, gate, scheduler, backups)
    assert image.type == "docker:index/image:Image"
    assert image.inputs["build"]["dockerfile"].endswith("docker/operations.Dockerfile")
    assert image.inputs["imageName"] == "lakehouse/operations:0.3.0" and image.inputs["skipPush"] is True
    container = lab.named("lakehouse-exporter")
    config = json.loads(uploads(lab, "lakehouse-exporter")["/etc/lakehouse/exporter.json"])
    assert config["catalog"]["s3.access-key-id"] == "reader-access-key"
    assert config["catalog"]["token"] == "${ENV:CATALOG_TOKEN}" and "lab-" not in json.dumps(config)
    envs = reveal(container.inputs["envs"])
    assert "CATALOG_TOKEN=lab-reader-catalog-token" in envs and "S3_SECRET_KEY=reader-secret-key" in envs


def test_lab_trino_serves_https_with_the_platform_certificate(lab):
    files = uploads(lab, "trino")
    config = files["/etc/trino/config.properties"]
    assert "http-server.authentication.type=PASSWORD\n" in config
    assert "http-server.authentication.allow-insecure-over-http=false\n" in config
    assert "http-server.https.keystore.path=/etc/trino/tls/trino.pem\n" in config
    assert files["/etc/trino/tls/trino.pem"].startswith("-----BEGIN")  # the issued key and certificate
    assert files["/etc/trino/password.db"].count(":") == 3 * 3  # three users, iterations:salt:hash each
    published = lab.outputs["certificates"]["trino-tls"]
    assert published.startswith("-----BEGIN CERTIFICATE") and "PRIVATE KEY" not in published  # the key stays secret
    certificate = lab.named("book2-trino-tls")
    assert certificate.inputs["hosts"] == ["trino", "127.0.0.1", "localhost"]
    assert certificate.parent == "book2-governance"


# -- aws -----------------------------------------------------------------------------------------------


def policy(run, name: str) -> dict:
    return json.loads(run.named(name).inputs["policy"])


def test_cloud_identities_are_iam_roles_with_the_lab_identities_rights(cloud):
    reader = {s["Sid"]: s for s in policy(cloud, "lakehouse-identity-reader-warehouse")["Statement"]}
    writer = {s["Sid"]: s for s in policy(cloud, "lakehouse-identity-writer-warehouse")["Statement"]}
    assert reader["WarehouseObjects"]["Action"] == ["s3:GetObject", "s3:GetObjectVersion"]
    assert "s3:PutObject" in writer["WarehouseObjects"]["Action"] and "s3:DeleteObject" in writer["WarehouseObjects"]["Action"]
    assert "kms:GenerateDataKey" not in reader["WarehouseKey"]["Action"]
    assert not [r for r in cloud.resources if r.name == "lakehouse-identity-platform"], "the platform is the deployer"
    assert set(cloud.outputs["identity_role_arns"]) == {"writer", "reader"}


def test_cloud_signals_live_in_managed_prometheus_with_the_same_rules(cloud):
    from tests.support.stacks import cloud_platform

    spec = load_platform(cloud_platform())
    rules = cloud.named("lakehouse-alert-rules")
    assert rules.inputs["data"] == rules_yaml(spec)
    workspace = cloud.named("lakehouse-signals")
    assert workspace.inputs["kmsKeyArn"].endswith("lakehouse-key")
    alertmanager = yaml.safe_load(yaml.safe_load(cloud.named("lakehouse-alertmanager").inputs["definition"])
                                  ["alertmanager_config"])
    assert alertmanager["receivers"][0]["sns_configs"][0]["topic_arn"].endswith(":lakehouse-alarms")
    topic = {s["Sid"]: s for s in policy(cloud, "lakehouse-alarms-publishers")["Statement"]}
    assert topic["ManagedPrometheusAlertManager"]["Principal"] == {"Service": "aps.amazonaws.com"}
    alarm = cloud.named("lakehouse-exporter-down").inputs
    assert alarm["dimensions"]["ServiceName"] == exporter.NAME and alarm["alarmActions"][0].endswith(":lakehouse-alarms")


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
    assert {s["name"] for s in containers["lakehouse-exporter"]["secrets"]} == {"POLARIS_ROOT_SECRET"}
