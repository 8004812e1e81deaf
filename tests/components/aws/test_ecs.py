"""The ECS building blocks (lakehouse_platform/components/aws/ecs.py) under Pulumi mocks: no secret in a task's environment, each
execution role reads only its own secrets."""

from __future__ import annotations

import json

from lakehouse_platform.services.registry import registry
from tests.support.aws_graph import containers
from tests.support.harness import SECRET_KEY, SECRET_SIG, ProgramRun


def test_secrets_never_in_task_environment(cloud: ProgramRun, streaming: ProgramRun) -> None:
    secret_values = {item.lab_default for d in registry() for item in d.governance.secrets if item.lab_default}
    for run in (cloud, streaming):
        for task, container in containers(run):
            plain = json.dumps({k: container.get(k) for k in ("environment", "command", "entryPoint")})
            for value in secret_values:
                assert value not in plain, f"{task}/{container['name']}: a secret value in plain text"
            assert "${secret:" not in plain
            for variable in container["environment"]:
                assert not any(word in variable["name"] for word in ("PASSWORD", "SECRET", "ENCRYPTION_KEY")), (
                    f"{task}/{container['name']}: {variable['name']} belongs in secrets")
            for entry in container["secrets"]:
                assert entry["valueFrom"].startswith("arn:aws:secretsmanager:")
    by_name = {c["name"]: c for _, c in containers(cloud)}
    polaris_secrets = {s["name"]: s["valueFrom"] for s in by_name["polaris"]["secrets"]}
    assert set(polaris_secrets) == {"QUARKUS_DATASOURCE_PASSWORD",
                                    "polaris.authentication.token-broker.symmetric-key.secret"}
    assert polaris_secrets["QUARKUS_DATASOURCE_PASSWORD"].endswith(":password::")  # the RDS-managed secret
    # Every replica signs and checks tokens with the one key from Secrets Manager.
    assert polaris_secrets["polaris.authentication.token-broker.symmetric-key.secret"].endswith(":secret:lakehouse-polaris-token-key-AbCdEf")
    assert "lakekeeper" not in by_name  # refused (ADR 0013)
    # The TLS key and the password hashes are whole secrets written to files at start, never in the task's text.
    # Trino's Polaris catalogs hold the writer's and the reader's own client secrets, never Polaris's root.
    assert {s["name"] for s in by_name["trino"]["secrets"]} == {
        "POLARIS_CLIENT_SECRET_WRITER", "POLARIS_CLIENT_SECRET_READER", "TRINO_SHARED_SECRET", "FILE_TRINO_PASSWORD_DB",
        "FILE_TRINO_TLS_PEM"}
    assert 'printf \'%s\' "$FILE_TRINO_TLS_PEM" > /etc/trino/tls/trino.pem' in by_name["trino"]["command"][0]
    bootstrap = by_name["polaris-bootstrap"]
    assert "${POLARIS_ROOT_SECRET}" in bootstrap["command"][0]
    # Secret values reach Secrets Manager as Pulumi secrets (encrypted in state).
    for version in cloud.of_type("aws:secretsmanager/secretVersion:SecretVersion"):
        assert version.inputs["secretString"][SECRET_KEY] == SECRET_SIG
    connector = streaming.named("lakehouse-bookshop-cdc").inputs["connectorConfiguration"]
    assert connector["database.password"] == "${secretsmanager:rds!db-lakehouse-catalog-db:password}"


def test_execution_roles_read_only_their_own_secrets(cloud: ProgramRun) -> None:
    policies = {r.name: json.loads(r.inputs["policy"]) for r in cloud.of_type("aws:iam/rolePolicy:RolePolicy")}
    trino = {s["Sid"]: s for s in policies["lakehouse-trino-execution"]["Statement"]}
    assert sorted(trino["ReadOwnSecrets"]["Resource"]) == [
        f"arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-{name}-AbCdEf"
        for name in ("polaris-client-secret-reader", "polaris-client-secret-writer", "trino-password-db",
                     "trino-shared-secret", "trino-tls-pem")]
    polaris = {s["Sid"]: s for s in policies["lakehouse-polaris-execution"]["Statement"]}
    assert sorted(polaris["ReadOwnSecrets"]["Resource"]) == [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-token-key-AbCdEf",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-lakehouse-catalog-db-AbCdEf"]
    # The maintenance task: governance.maintenance's catalog credential and Trino password, Trino's certificate
    # (secrets of the task's own, made for it: the TLS key beside that certificate is not among them).
    maintenance = {s["Sid"]: s for s in policies["lakehouse-maintenance-execution"]["Statement"]}
    assert sorted(maintenance["ReadOwnSecrets"]["Resource"]) == [
        f"arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-{name}-AbCdEf"
        for name in ("polaris-client-secret-writer", "trino-password-writer", "trino-tls-cert")]
