"""Credentials (governance): vended credentials on aws, never static keys."""

from __future__ import annotations

import base64
import json

from tests.support.policy_support import aws, cloud_context, ecs_task, graph, lab, violations


def test_static_keys_on_aws_are_refused():
    context = cloud_context()
    key = aws("aws:iam/accessKey:AccessKey", "trino-key", "governance", {"user": "trino"}, tags=False)
    catalog = "connector.name=iceberg\ns3.aws-access-key=${ENV:S3_ACCESS_KEY}\ns3.aws-secret-key=${ENV:S3_SECRET_KEY}\n"
    command = ["/bin/bash", "-c",
               f"set -e\necho {base64.b64encode(catalog.encode()).decode()} | base64 -d > /etc/trino/catalog/polaris.properties"]
    task = ecs_task("trino", [{"name": "trino", "image": "trinodb/trino:483", "memory": 4096, "command": command}], "trino")
    assert violations("governance-vended-credentials", [key, task], context) == [
        "aws:AccessKey 'trino-key' (layer governance, owner security, executed by platform) breaks "
        "governance-vended-credentials: creates a static access key for IAM user trino; engines get short-lived "
        "credentials from the catalog's vending role (task roles and vended credentials), never long-lived keys",
        "aws:TaskDefinition 'trino' (layer compute, owner analytics engineering) breaks governance-vended-credentials: "
        "a Trino catalog file sets s3.aws-access-key, s3.aws-secret-key; on aws Trino reads S3 with credentials "
        "vended by the catalog (vended-credentials-enabled=true) or its task role",
    ]
    resources, lab_context = lab()  # the lab's store has no vending: static keys from the environment are its way
    assert violations("governance-vended-credentials", resources, lab_context) == []


def test_cloud_graph_refuses_static_keys_and_plain_credentials_in_a_task():
    resources, context = graph("cloud")
    task = next(r for r in resources if r.type == "aws:ecs/taskDefinition:TaskDefinition"
                and r.props["tags"].get("lakehouse.service") == "trino")
    containers = json.loads(task.props["containerDefinitions"])
    containers[0]["environment"].append({"name": "AWS_SECRET_ACCESS_KEY", "value": "not-vended"})
    task.props["containerDefinitions"] = json.dumps(containers)
    name = containers[0]["name"]
    head = f"aws:TaskDefinition '{task.name}' (layer compute, owner analytics engineering) breaks "
    assert violations("secrets-not-plaintext", resources, context) == [
        head + f"secrets-not-plaintext: container {name} passes AWS_SECRET_ACCESS_KEY in environment; credentials go in "
               "secrets (valueFrom Secrets Manager or SSM)"
    ]
    assert violations("governance-vended-credentials", resources, context) == [
        head + f"governance-vended-credentials: container {name} is given static AWS keys (AWS_SECRET_ACCESS_KEY); "
               "use the task role"
    ]
