"""Secrets rules: no credential in plain text, by name or by value."""

from __future__ import annotations

import base64
import dataclasses
import json

from lakehouse_platform.config import load_platform
from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.resources import Resource
from tests.support.policy_support import (
    ROOT,
    aws,
    cloud_context,
    ecs_task,
    graph,
    lab,
    named,
    secret,
    stack_platform,
    violations,
)


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


def test_a_switch_named_like_a_credential_is_no_credential():
    """Lakekeeper's LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS=true is a setting; a token next to it is not."""
    context = lab()[1]
    keeper = lakekeeper_container([])  # its plan as it would run (the stacks refuse it for now: ADR 0013)
    keeper.props["envs"] = ["LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS=true", "API_TOKEN=abc123"]
    task = ecs_task("lakekeeper", [{"name": "lakekeeper", "image": "quay.io/lakekeeper/catalog:v0.13.3", "memory": 256,
                                    "environment": [{"name": "LAKEKEEPER__S3_REQUIRE_EXTERNAL_ID_FOR_SYSTEM_CREDENTIALS",
                                                     "value": "false"},
                                                    {"name": "LAKEKEEPER__PG_PASSWORD", "value": "hunter2"}]}],
                    "lakekeeper", "catalog")
    assert violations("secrets-not-plaintext", [keeper], context) == [
        "docker:Container 'lakekeeper' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable API_TOKEN holds a credential in plain text; make the value a Pulumi secret (config --secret or "
        "pulumi.Output.secret)",
    ]
    assert violations("secrets-not-plaintext", [task], cloud_context()) == [
        "aws:TaskDefinition 'lakekeeper' (layer catalog, owner platform) breaks secrets-not-plaintext: container "
        "lakekeeper passes LAKEKEEPER__PG_PASSWORD in environment; credentials go in secrets (valueFrom Secrets "
        "Manager or SSM)",
    ]


def lakekeeper_container(envs: list[str]) -> Resource:
    """Lakekeeper's lab container as the docker target would make it (the lab refuses it for now: ADR 0013)."""
    return Resource(type="docker:index/container:Container", name="lakekeeper", props={
        "envs": envs, "labels": [{"label": "lakehouse.layer", "value": "catalog"},
                                 {"label": "lakehouse.owner", "value": "platform"},
                                 {"label": "lakehouse.service", "value": "lakekeeper"}]})


def test_password_inside_a_url_is_refused():
    from lakehouse_platform.services.context import ServiceContext
    from lakehouse_platform.services.lakekeeper.config import pg_env

    context = lab()[1]
    env = pg_env(ServiceContext(load_platform(stack_platform("lab")), "lakekeeper"))
    keeper = lakekeeper_container([f"{k}={v.replace('${secret:postgres-password}', 'pw')}" for k, v in env.items()
                                   if "ENCRYPTION" not in k])
    assert violations("secrets-not-plaintext", [keeper], context) == [
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


# --------------------------------------------------------------------------------------------
# secret-values-not-plaintext: a secret's value copied into plain text, whatever it is called
# --------------------------------------------------------------------------------------------

ADVICE = ("in plain text; make the input a Pulumi secret (pulumi.Output.secret) or pass a reference to the secret, "
          "never its value")
LAB_STORE_KEY = "lab-secret-key"  # the lab store's secret key (a secret in the store's s3.json and trino's env)
LAB_POLARIS_SECRET = "lab-polaris-root-secret"


def test_the_lab_stores_secret_key_in_a_plain_variable_file_or_command_is_refused():
    resources, context = lab()
    broker = named(resources, "kafka", "docker:index/container:Container")  # its env holds no secret: a plain list
    index = len(broker.props["envs"])
    broker.props["envs"].append(f"STORE_AUTH={LAB_STORE_KEY}")  # a name no credential pattern knows
    broker.props["uploads"] = [{"file": "/etc/kafka/store.properties",
                                "content": f"store.endpoint=http://seaweedfs:8333\nstore.auth={LAB_STORE_KEY}\n"}]
    flink = named(resources, "flink-jobmanager", "docker:index/container:Container")
    flink.props["command"] = [*flink.props["command"], f"-Dcatalog.credential=root:{LAB_POLARIS_SECRET}"]
    store_key = "secret AWS_SECRET_ACCESS_KEY of docker:Container 'flink-jobmanager'"  # the first holder by kind and name
    found = violations("secret-values-not-plaintext", resources, context)
    assert sorted(found) == [  # the graph's order is the order of registration, which varies
        "docker:Container 'flink-jobmanager' (layer compute, owner streaming) breaks secret-values-not-plaintext: "
        "command[1] holds the value of secret POLARIS_ROOT_SECRET of docker:Container 'polaris-catalog' "
        f"{ADVICE}",
        f"docker:Container 'kafka' (layer compute, owner streaming) breaks secret-values-not-plaintext: "
        f"envs[{index}] (STORE_AUTH) holds the value of {store_key} {ADVICE}",
        f"docker:Container 'kafka' (layer compute, owner streaming) breaks secret-values-not-plaintext: "
        f"uploads[0].content holds the value of {store_key} {ADVICE}",
    ]
    assert not any(LAB_STORE_KEY in m or LAB_POLARIS_SECRET in m for m in found)
    # The name-based rule does not see any of them: STORE_AUTH, store.auth and a command are not credential names.
    assert violations("secrets-not-plaintext", resources, context) == []


def test_a_secret_copied_into_an_ecs_task_definition_is_refused_even_inside_a_base64_file():
    resources, context = graph("cloud")
    task = named(resources, "lakehouse-polaris", "aws:ecs/taskDefinition:TaskDefinition")
    containers = json.loads(task.props["containerDefinitions"])
    index = len(containers[0]["environment"])
    containers[0]["environment"].append({"name": "POLARIS_BOOTSTRAP", "value": "POLARIS,root,test-polaris-root-secret"})
    body = "realm=POLARIS\nroot=test-polaris-token-signing-key\n"
    containers[0]["command"] = ["/bin/sh", "-c", f"echo {base64.b64encode(body.encode()).decode()} | base64 -d > "
                                                 "/etc/polaris/boot.properties && exec polaris"]
    task.props["containerDefinitions"] = json.dumps(containers)
    head = ("aws:TaskDefinition 'lakehouse-polaris' (layer catalog, owner platform) breaks "
            "secret-values-not-plaintext: ")
    token_key = ("containerDefinitions[0].command[2] (file /etc/polaris/boot.properties) holds the value of secret "
                 "input secretString of aws:SecretVersion 'lakehouse-polaris-token-key-value' ")
    assert violations("secret-values-not-plaintext", resources, context) == [
        head + f"containerDefinitions[0].environment[{index}].value holds the value of secret input secretString of "
               f"aws:SecretVersion 'lakehouse-polaris-root-secret-value' {ADVICE}",
        head + token_key + ADVICE,
    ]
    # With the stack's secret config at hand (the engine passes it), the message names the config key.
    with_config = dataclasses.replace(context, secrets={"lakehouse:polarisRootSecret": "test-polaris-root-secret"})
    assert violations("secret-values-not-plaintext", resources, with_config) == [
        head + f"containerDefinitions[0].environment[{index}].value holds the value of the stack's secret config "
               f"lakehouse:polarisRootSecret {ADVICE}",
        head + token_key + ADVICE,
    ]


def test_a_secret_config_value_no_resource_wraps_is_still_found():
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog",
              {"backupRetentionPeriod": 14, "manageMasterUserPassword": True,
               "parameterGroupName": "lakehouse-catalog-db", "identifier": "lakehouse-s3cr3t-value-9"}, service="postgres")
    context = dataclasses.replace(cloud_context(), secrets={"lakehouse:dbSuffix": "s3cr3t-value-9", "lakehouse:pin": "1234"})
    assert violations("secret-values-not-plaintext", [rds], context) == [
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks secret-values-not-plaintext: identifier "
        f"holds the value of the stack's secret config lakehouse:dbSuffix {ADVICE}"
    ]
    assert violations("secret-values-not-plaintext", [rds], cloud_context()) == []  # no secret known: nothing to find


def test_the_engine_hands_the_pack_its_secret_config_values():
    import lakehouse_platform.policies.engine as engine

    config = {"lakehouse:platform": json.dumps(stack_platform("cloud")), "aws:region": "eu-west-1",
              "lakehouse:polarisRootSecret": "from-the-engine-1",
              "lakehouse:structured": json.dumps({"user": "u", "password": "from-the-engine-2"})}
    assert engine.secret_config(config, ["lakehouse:polarisRootSecret", "lakehouse:structured", "lakehouse:unset"]) == {
        "lakehouse:polarisRootSecret": "from-the-engine-1",
        "lakehouse:structured.user": "u",
        "lakehouse:structured.password": "from-the-engine-2",
    }
    saved = dict(engine.STATE)
    try:
        engine.STATE.update(stack="cloud", context=None, context_error=None, config=config,
                            secret_keys=["lakehouse:polarisRootSecret"])
        context = engine.stack_context(None)
        assert context is not None and context.secrets == {"lakehouse:polarisRootSecret": "from-the-engine-1"}
        assert "from-the-engine-1" not in repr(context)
        explicit = engine.stack_context({"context": pack_config.context_for_stack("cloud", ROOT)})
        assert explicit is not None and explicit.secrets == {"lakehouse:polarisRootSecret": "from-the-engine-1"}
    finally:
        engine.STATE.clear()
        engine.STATE.update(saved)


def test_a_native_service_given_a_secret_on_its_command_line_is_refused():
    resources, context = graph("native")
    trino = named(resources, "trino", "pulumi-python:dynamic/native:LocalService")
    index = len(trino.props["argv"])
    trino.props["argv"] = [*trino.props["argv"], "--store-key=lab-secret-key"]
    assert violations("secret-values-not-plaintext", resources, context) == [
        "native:LocalService 'trino' (layer compute, owner analytics engineering) breaks secret-values-not-plaintext: "
        f"argv[{index}] holds the value of secret AWS_SECRET_ACCESS_KEY of native:LocalService 'flink-jobmanager' "
        f"{ADVICE}"
    ]


def test_a_public_certificate_handed_as_a_secret_is_no_secret_to_keep_out_of_plain_text():
    """A deployed stack's preview knows its certificates: the PEM a service gets among its secrets (its trust store)
    is the same public certificate the stack outputs and the certificate resource hold in plain text. Not a leak; the
    private key is one."""
    resources, context = graph("native")
    trino = named(resources, "trino", "pulumi-python:dynamic/native:LocalService")
    cert = "-----BEGIN CERTIFICATE-----\nMIIBpublicpart\n-----END CERTIFICATE-----\n"
    key = "-----BEGIN PRIVATE KEY-----\nMIIEprivatepart\n-----END PRIVATE KEY-----\n"
    trino.props["env"]["value"].update(LAKEHOUSE_SECRET_TRINO_TLS_CERT=cert,  # its env is a secret, whole
                                       LAKEHOUSE_SECRET_TRINO_TLS_KEY=key)
    certificate = Resource("pulumi-python:dynamic/governance:SelfSignedCertificate", "trino-tls",
                           {"cert_pem": cert, "labels": {}}, "urn:pulumi:native::p::x::trino-tls", None)
    assert violations("secret-values-not-plaintext", [*resources, certificate], context) == []
    certificate.props["key_pem"] = key
    assert violations("secret-values-not-plaintext", [*resources, certificate], context) == [
        "governance:SelfSignedCertificate 'trino-tls' (layer unknown, owner unknown) breaks secret-values-not-plaintext: "
        f"key_pem holds the value of secret LAKEHOUSE_SECRET_TRINO_TLS_KEY of native:LocalService 'trino' {ADVICE}"]
