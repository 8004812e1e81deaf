"""Secrets rules: no credential in plain text, by name or by value."""

from __future__ import annotations

from tests.policy_support import aws, cloud_context, ecs_task, lab, named, secret, violations

def test_plain_text_credentials_in_environment_and_files_are_refused():
    resources, context = lab()
    fixture = named(resources, "rest-fixture", "docker:index/container:Container")
    fixture.props["envs"] = fixture.props["envs"]["value"]  # the same values, no longer secret
    store = named(resources, "seaweedfs", "docker:index/container:Container")
    store.props["uploads"] = store.props["uploads"]["value"]
    assert violations("secrets-not-plaintext", resources, context) == [
        "docker:Container 'seaweedfs' (layer storage, owner platform) breaks secrets-not-plaintext: config file "
        "/etc/seaweedfs/s3.json holds credential(s) in plain text (secretKey); make the file content a Pulumi secret "
        "or read the value from the environment (${ENV:...})",
        "docker:Container 'rest-fixture' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable AWS_SECRET_ACCESS_KEY holds a credential in plain text; make the value a Pulumi secret (config "
        "--secret or pulumi.Output.secret)",
    ]


def test_password_inside_a_url_is_refused():
    resources, context = lab()
    keeper = named(resources, "lakekeeper", "docker:index/container:Container")
    keeper.props["envs"] = [e for e in keeper.props["envs"]["value"] if "ENCRYPTION" not in e]
    assert violations("secrets-not-plaintext", resources, context) == [
        "docker:Container 'lakekeeper' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable LAKEKEEPER__PG_DATABASE_URL_READ holds a URL with a password in plain text; make the value a Pulumi "
        "secret",
        "docker:Container 'lakekeeper' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable LAKEKEEPER__PG_DATABASE_URL_WRITE holds a URL with a password in plain text; make the value a "
        "Pulumi secret",
    ]


def test_ecs_credentials_in_environment_are_refused():
    task = ecs_task("polaris", [{"name": "polaris", "image": "apache/polaris:1.7.0", "memory": 1024,
                                 "environment": [{"name": "QUARKUS_DATASOURCE_PASSWORD", "value": "hunter2"}]}],
                    "polaris", "catalog")
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 14, "password": "hunter2"},
              service="postgres")
    found = violations("secrets-not-plaintext", [task, rds], cloud_context())
    assert found == [
        "aws:TaskDefinition 'polaris' (layer catalog, owner platform) breaks secrets-not-plaintext: container polaris "
        "passes QUARKUS_DATASOURCE_PASSWORD in environment; credentials go in secrets (valueFrom Secrets Manager or SSM)",
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks secrets-not-plaintext: password is set in "
        "plain text; use a Pulumi secret or manage_master_user_password",
    ]
    assert not any("hunter2" in m for m in found)
    rds.props["password"] = secret("hunter2")
    assert violations("secrets-not-plaintext", [rds], cloud_context()) == []
