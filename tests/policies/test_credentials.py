"""Credentials (governance): vended credentials on aws, never static keys."""

from __future__ import annotations

import base64
import json

from tests.support.policy_support import aws, cloud_context, ecs_task, graph, lab, named, violations


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


# -- a catalog's root/admin credential: its bootstrap jobs' alone ------------------------------------------------

ROOT_RULE = "catalog-admin-only-in-bootstrap"
ROOT_ADVICE = ("only its bootstrap jobs (polaris-bootstrap, polaris-catalog) may hold it, every client acts as its "
               "identity's own principal")


def test_on_lab_and_aws_only_polaris_s_bootstrap_jobs_hold_its_root():
    for stack in ("lab", "cloud"):
        resources, context = graph(stack)
        assert violations(ROOT_RULE, resources, context) == [], stack
        holders = {r.name for r in resources if "polaris-root-secret" in json.dumps(r.props, default=str)
                   and r.type in ("docker:index/container:Container", "aws:ecs/taskDefinition:TaskDefinition")}
        assert holders == ({"polaris-bootstrap", "polaris-catalog"} if stack == "lab"
                           else {"lakehouse-polaris-bootstrap", "lakehouse-polaris-catalog"}), stack


def test_handing_root_to_the_lab_exporter_is_refused_naming_it_and_its_owner():
    resources, context = lab()
    exporter = named(resources, "lakehouse-exporter", "docker:index/container:Container")
    # Root's value under another name (the lab default spells the secret's name too: both are found).
    exporter.props["envs"]["value"].append("POLARIS_CLIENT_SECRET=lab-polaris-root-secret")
    head = ("docker:Container 'lakehouse-exporter' (layer observability, owner platform) breaks "
            "catalog-admin-only-in-bootstrap: carries polaris's root/admin credential: ")
    assert violations(ROOT_RULE, resources, context) == [
        head + f"it names the secret polaris-root-secret (polaris-root-secret); {ROOT_ADVICE}",
        head + f"it holds the value of polaris-root-secret; {ROOT_ADVICE}"]
    # A value that names nothing is still found by its value.
    resources, context = lab()
    catalog_job = named(resources, "polaris-catalog", "docker:index/container:Container")
    catalog_job.props["envs"]["value"] = [e.replace("lab-polaris-root-secret", "r00t-s3cret-value")
                                          for e in catalog_job.props["envs"]["value"]]
    exporter = named(resources, "lakehouse-exporter", "docker:index/container:Container")
    exporter.props["envs"]["value"].append("CATALOG_CREDENTIAL=r00t-s3cret-value")
    assert violations(ROOT_RULE, resources, context) == [head + f"it holds the value of polaris-root-secret; {ROOT_ADVICE}"]


def test_handing_root_to_the_cloud_exporter_or_a_trino_catalog_is_refused():
    resources, context = graph("cloud")
    task = named(resources, "lakehouse-lakehouse-exporter", "aws:ecs/taskDefinition:TaskDefinition")
    containers = json.loads(task.props["containerDefinitions"])
    containers[0]["secrets"].append({"name": "CATALOG_CLIENT_SECRET", "valueFrom":
                                     "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-root-secret-AbCdEf"})
    task.props["containerDefinitions"] = json.dumps(containers)
    trino = named(resources, "lakehouse-trino", "aws:ecs/taskDefinition:TaskDefinition")
    catalog = "connector.name=iceberg\niceberg.rest-catalog.oauth2.credential=root:${ENV:OTHER}\n"
    trino_containers = json.loads(trino.props["containerDefinitions"])
    trino_containers[0]["command"] = ["/bin/bash", "-c", f"echo {base64.b64encode(catalog.encode()).decode()} | "
                                                         "base64 -d > /etc/trino/catalog/polaris.properties"]
    trino.props["containerDefinitions"] = json.dumps(trino_containers)
    assert sorted(violations(ROOT_RULE, resources, context)) == [
        "aws:TaskDefinition 'lakehouse-lakehouse-exporter' (layer observability, owner platform) breaks "
        "catalog-admin-only-in-bootstrap: carries polaris's root/admin credential: it names the secret "
        f"polaris-root-secret (polaris-root-secret); {ROOT_ADVICE}",
        "aws:TaskDefinition 'lakehouse-trino' (layer compute, owner analytics engineering) breaks "
        "catalog-admin-only-in-bootstrap: carries polaris's root/admin credential: a credential setting authenticates "
        f"as polaris's root; {ROOT_ADVICE}",
    ]
