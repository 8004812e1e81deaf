"""The project's own AWS calls, run for real against moto in server mode, on the shapes the cloud graph renders.

The cloud program runs under Pulumi mocks (a declared table added, so the declared-tables deployment step
exists); its recorded inputs are created in moto with boto3 (``rendered_in_moto``): IAM roles and inline
policies, the KMS key, the buckets with their configuration, log groups, the VPC with its subnets and
security groups, the ECS clusters and task definitions. Then the code the project itself runs against AWS
runs against them, unchanged:

* ``EcsTaskRun``'s provider (``lakehouse_platform/targets/aws/run_task.py``): create, diff and update start the
  declared-tables task on Fargate in the private subnets with the engines' security group, poll it to
  STOPPED and check its exit codes;
* the ``catalog_jobs`` output: each job's ``aws ecs run-task`` line, run in its order by the AWS CLI as
  CD does, then ``aws ecs wait tasks-stopped`` and ``aws ecs describe-tasks``;
* the S3 reads of recovery and maintenance (``recovery.tables_on_storage``, ``maintenance.list_objects``)
  through the operations' own client (``lakehouse_platform.runtime.config.s3_client``) on the cloud's operations
  config, and the host profile's client (``lakehouse_platform.control.clients.s3_client``);
* the native target's bucket task (``python -m lakehouse_platform.runtime.tasks create-bucket``), S3 API only.

How the test reaches S3 past the TLS-only bucket policy: moto serves HTTPS here, with a certificate the
platform's own issuer makes for 127.0.0.1, verified by every client through ``AWS_CA_BUNDLE``; the
project's clients name no endpoint on aws and reach it through ``AWS_ENDPOINT_URL``. moto does not evaluate
``aws:SecureTransport`` (its policy conditions know ``StringEquals`` only, and S3 gives them no request
context), so in moto the rendered ``DenyInsecureTransport`` statement denies every object request, over
TLS too. ``test_the_tls_only_bucket_policy_refuses_plain_http`` therefore shows the policy refusing plain
HTTP on a second, plain-HTTP moto server, and pins moto's refusal over TLS (it fails the day moto evaluates
the condition: then put the policies on the module's buckets); the module's buckets carry every other
rendered setting (versioning, SSE-KMS with the platform's key, public access block, ownership, lifecycle)
but not their policy.
"""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from lakehouse_platform.config import load_platform
from lakehouse_platform.control.procedures import tables_location
from lakehouse_platform.runtime import maintenance, recovery
from lakehouse_platform.runtime.config import Credentials, s3_client
from lakehouse_platform.services.operations_config import host_paths, operations_config
from lakehouse_platform.targets.aws import run_task as rt
from tests.support.aws_emulator import MotoServer, moto_server
from tests.support.harness import ProgramRun, cached_run
from tests.support.rendered_in_moto import InMoto
from tests.support.stacks import stack_platform

pytestmark = pytest.mark.toolchain

DECLARED = {"namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
            "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"]}


def cloud_platform() -> dict[str, Any]:
    platform = stack_platform("cloud")
    platform["tables"] = [DECLARED]
    return platform


REGION = cloud_platform()["aws"]["region"]


@pytest.fixture(scope="module")
def cloud() -> ProgramRun:
    return cached_run("cloud", cloud_platform())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_server(tmp_path_factory.mktemp("moto-tls"), tls=True) as running:
        yield running


@pytest.fixture(scope="module")
def aws_env(server: MotoServer) -> Iterator[dict[str, str]]:
    """This process's AWS environment pointed at the emulator; boto3's default session made anew under it."""
    env = server.client_env(REGION)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(boto3, "DEFAULT_SESSION", None)
        yield env


@pytest.fixture(scope="module")
def aws(cloud: ProgramRun, aws_env: dict[str, str]) -> InMoto:
    """The cloud graph's resources, created in moto (bucket policies left off: module docstring)."""
    return InMoto(cloud, boto3.session.Session(), REGION).everything(bucket_policies=False)


def _eni_of(task: dict[str, Any]) -> dict[str, Any]:
    (attachment,) = [a for a in task["attachments"] if a["type"] == "ElasticNetworkInterface"]
    details = {d["name"]: d["value"] for d in attachment["details"]}
    ec2 = boto3.client("ec2")
    (eni,) = ec2.describe_network_interfaces(NetworkInterfaceIds=[details["networkInterfaceId"]])["NetworkInterfaces"]
    return eni


def _egress_to(group_id: str, port: int) -> set[str]:
    """The security groups and CIDRs ``group_id`` may open TCP connections to on ``port``."""
    (group,) = boto3.client("ec2").describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    allowed: set[str] = set()
    for rule in group["IpPermissionsEgress"]:
        if rule["IpProtocol"] == "-1" or (rule["IpProtocol"] == "tcp" and rule["FromPort"] <= port <= rule["ToPort"]):
            allowed |= {pair["GroupId"] for pair in rule.get("UserIdGroupPairs", [])}
            allowed |= {r["CidrIp"] for r in rule.get("IpRanges", [])}
    return allowed


# -- ECS: the deployment step and the catalog jobs ---------------------------------------------------


def test_the_declared_tables_step_runs_its_task_in_the_private_subnets_to_a_clean_exit(
        cloud: ProgramRun, aws: InMoto, server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.ecs_tasks_stop(immediately=False)  # RUNNING, DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED: polled
    monkeypatch.setattr(rt, "POLL_S", 0.01)
    (step,) = [r for r in cloud.of_type("pulumi-python:dynamic/aws:EcsTaskRun") if r.name.endswith("declared-tables")]
    props = aws.real({k: v for k, v in step.inputs.items() if not k.startswith("__")})
    provider = rt.EcsTaskRunProvider()

    created = provider.create(dict(props))

    ecs = boto3.client("ecs")
    (task,) = ecs.describe_tasks(cluster=props["cluster"], tasks=[created.id])["tasks"]
    assert task["lastStatus"] == "STOPPED"
    assert task["clusterArn"] == aws.arn_of("ecs", "lakehouse-compute")
    assert task["taskDefinitionArn"] == aws.arn_of("ecs", "lakehouse-tables")
    assert task["launchType"] == "FARGATE" and task["startedBy"] == "pulumi-deployment"
    assert all(c["exitCode"] == 0 for c in task["containers"]) and [c["name"] for c in task["containers"]] == [
        "tables"]
    assert created.outs["task_arn"] == created.id  # (moto reports no stoppedAt: stopped_at stays empty here)
    # In a private subnet, as the engines: the group whose egress reaches Trino's coordinator (8080).
    eni = _eni_of(task)
    assert props["subnets"] == [aws.id_of("lakehouse-private-0"), aws.id_of("lakehouse-private-1")]
    assert eni["SubnetId"] == props["subnets"][0]
    engines = aws.id_of("lakehouse-engines")
    assert [g["GroupId"] for g in eni["Groups"]] == [engines]
    assert engines in _egress_to(engines, 8080)

    assert not provider.diff(created.id, created.outs, dict(props)).changes
    changed = {**props, "trigger": "another digest"}
    assert provider.diff(created.id, created.outs, changed).changes
    updated = provider.update(created.id, created.outs, changed)
    assert updated.outs["task_arn"] != created.id
    (again,) = ecs.describe_tasks(cluster=props["cluster"], tasks=[updated.outs["task_arn"]])["tasks"]
    assert again["lastStatus"] == "STOPPED"


def _aws_cli(*args: str) -> dict[str, Any]:
    """One AWS CLI command (the venv's ``aws``), JSON out; the environment is this process's (the emulator's)."""
    done = subprocess.run([str(Path(sys.executable).with_name("aws")), *args, "--output", "json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"aws {' '.join(args)}: exit {done.returncode}: {done.stderr[-2000:]}"
    return json.loads(done.stdout) if done.stdout.strip() else {}


def test_cd_runs_the_catalog_jobs_in_order_with_the_aws_cli(cloud: ProgramRun, aws: InMoto,
                                                             server: MotoServer) -> None:
    server.ecs_tasks_stop(immediately=True)  # the CLI's waiter polls every 6 s
    jobs = aws.real(cloud.outputs["catalog_jobs"])
    catalogs = aws.id_of("lakehouse-catalogs")
    ran = []
    for name in sorted(jobs, key=lambda j: jobs[j]["order"]):
        job = jobs[name]
        argv = shlex.split(job["command"])
        assert argv[:3] == ["aws", "ecs", "run-task"], job["command"]
        started = _aws_cli(*argv[1:])
        assert not started["failures"], started["failures"]
        (task,) = started["tasks"]
        _aws_cli("ecs", "wait", "tasks-stopped", "--cluster", job["cluster"], "--tasks", task["taskArn"])
        (stopped,) = boto3.client("ecs").describe_tasks(cluster=job["cluster"], tasks=[task["taskArn"]])["tasks"]
        assert stopped["lastStatus"] == "STOPPED"
        assert stopped["taskDefinitionArn"] == job["task_definition"]
        assert [c["exitCode"] for c in stopped["containers"]] == [0] * len(stopped["containers"])
        eni = _eni_of(stopped)
        assert eni["SubnetId"] in job["subnets"] and [g["GroupId"] for g in eni["Groups"]] == [catalogs]
        ran.append(name)
    assert ran == ["postgres-init", "polaris-bootstrap", "polaris-catalog"]  # Lakekeeper: refused (ADR 0013)
    # The catalogs' jobs reach the catalogs through the load balancer and the database on 5432.
    assert aws.id_of("lakehouse-lb") in _egress_to(catalogs, 8181)
    assert aws.id_of("lakehouse-db") in _egress_to(catalogs, 5432)


# -- S3: what recovery and maintenance read ------------------------------------------------------------


def _metadata(sequence: int, updated_ms: int) -> bytes:
    return json.dumps({"format-version": 2, "last-sequence-number": sequence, "last-updated-ms": updated_ms}).encode()


@pytest.fixture(scope="module")
def warehouse(aws: InMoto) -> dict[str, Any]:
    """Tables laid out under the default catalog's location in the warehouse bucket, as Polaris writes them;
    the uploads carry no encryption header: the bucket's default (SSE-KMS, the platform's key) applies."""
    spec = load_platform(cloud_platform())
    config = operations_config(spec, "cloud", host_paths(spec, "/nonexistent/state"))
    location = tables_location(config)
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    objects: dict[str, bytes] = {
        "shop/orders/metadata/00001-0f0f0f0f-aaaa.metadata.json": _metadata(1, 1000),
        "shop/orders/metadata/00002-1e1e1e1e-bbbb.metadata.json": _metadata(2, 2000),
        "shop/orders/metadata/snap-1-1-cccc.avro": b"avro",
        "shop/customers/metadata/00003-aaaa.metadata.json": _metadata(3, 3000),
        "shop/customers/metadata/00003-bbbb.metadata.json": _metadata(4, 3500),  # two writers raced to version 3
        # More data files than one listing page (1000 keys): the paginated reads must see them all.
        **{f"shop/orders/data/{i:05d}-0-data.parquet": b"p" for i in range(1005)},
    }
    s3 = boto3.client("s3")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda item: s3.put_object(Bucket=bucket, Key=f"{prefix}{item[0]}", Body=item[1]),
                      objects.items()))
    return {"config": config, "location": location, "bucket": bucket, "prefix": prefix, "objects": objects}


def test_the_operations_client_reaches_the_emulator_over_tls_and_finds_the_newest_metadata(
        warehouse: dict[str, Any], server: MotoServer) -> None:
    s3 = s3_client(warehouse["config"], Credentials())
    assert s3.meta.endpoint_url == server.endpoint and server.endpoint.startswith("https://")
    # The default catalog is Polaris: its ``warehouse`` is a catalog name, its tables live under its own prefix.
    assert warehouse["config"].catalog.properties["warehouse"] == "warehouse"
    assert warehouse["location"] == f"s3://{warehouse['bucket']}/polaris/"

    found = recovery.tables_on_storage(s3, warehouse["location"])

    root = warehouse["location"]
    assert {k: (v.metadata_location, v.version, v.candidates) for k, v in found.items()} == {
        "shop.customers": (f"{root}shop/customers/metadata/00003-bbbb.metadata.json", 3, 2),
        "shop.orders": (f"{root}shop/orders/metadata/00002-1e1e1e1e-bbbb.metadata.json", 2, 2),
    }


def test_maintenance_lists_every_object_under_a_table_past_one_page(warehouse: dict[str, Any]) -> None:
    s3 = s3_client(warehouse["config"], Credentials())
    keys = maintenance.list_objects(s3, f"{warehouse['location']}shop/orders")
    expected = {warehouse["prefix"] + k for k in warehouse["objects"] if k.startswith("shop/orders/")}
    assert len(expected) > 1000 and keys == expected


def test_objects_written_without_headers_are_encrypted_with_the_platforms_key(
        aws: InMoto, warehouse: dict[str, Any]) -> None:
    head = boto3.client("s3").head_object(Bucket=warehouse["bucket"],
                                          Key=warehouse["prefix"] + "shop/orders/metadata/snap-1-1-cccc.avro")
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"] == aws.arn_of("kms", "lakehouse-key")
    assert head["BucketKeyEnabled"] is True
    versioning = boto3.client("s3").get_bucket_versioning(Bucket=warehouse["bucket"])
    assert versioning["Status"] == "Enabled"


def test_the_host_profile_client_reaches_the_warehouse_bucket(cloud: ProgramRun, aws: InMoto,
                                                              server: MotoServer) -> None:
    from lakehouse_platform.control import clients

    # As ``pulumi stack output --json --show-secrets`` gives them: secret values plain.
    outputs = {k: v["value"] if isinstance(v, dict) and v.get("secret") is True else v for k, v in cloud.outputs.items()}
    s3 = clients.s3_client(outputs)
    assert s3.meta.endpoint_url == server.endpoint and s3.meta.region_name == REGION
    s3.head_bucket(Bucket=cloud.outputs["bucket"])


def test_the_operations_repository_and_the_registry_token_the_push_uses(cloud: ProgramRun, aws: InMoto) -> None:
    """ECR accepts the rendered repository and lifecycle rules as they are; the token the program asks for
    (``aws.ecr.get_authorization_token``) is the registry's user and password for that repository's registry, and
    the task definitions ECS registered name the repository by digest."""
    ecr = boto3.client("ecr")
    (rendered,) = cloud.of_type("aws:ecr/repository:Repository")
    (repository,) = ecr.describe_repositories(repositoryNames=[rendered.inputs["name"]])["repositories"]
    assert repository["imageTagMutability"] == "IMMUTABLE"
    assert repository["imageScanningConfiguration"] == {"scanOnPush": True}
    key = aws.arn_of("kms", "lakehouse-key")
    assert repository["encryptionConfiguration"] == {"encryptionType": "KMS", "kmsKey": key}
    (lifecycle,) = cloud.of_type("aws:ecr/lifecyclePolicy:LifecyclePolicy")
    stored = ecr.get_lifecycle_policy(repositoryName=repository["repositoryName"])["lifecyclePolicyText"]
    assert json.loads(stored) == json.loads(lifecycle.inputs["policy"])

    (token,) = ecr.get_authorization_token(registryIds=[repository["registryId"]])["authorizationData"]
    user, _, password = base64.b64decode(token["authorizationToken"]).decode().partition(":")
    assert user == "AWS" and password  # what the provider's user_name and password are (the token, decoded)
    assert repository["repositoryUri"].startswith(token["proxyEndpoint"].removeprefix("https://") + "/")

    images = {c["name"]: c["image"] for family in ("lakehouse-cloud-lakehouse-exporter", "lakehouse-cloud-maintenance")
              for c in boto3.client("ecs").describe_task_definition(taskDefinition=family)["taskDefinition"][
                  "containerDefinitions"]}
    for name in ("lakehouse-exporter", "maintenance"):
        assert images[name].startswith(repository["repositoryUri"] + "@sha256:"), images


def test_the_tls_only_bucket_policy_refuses_plain_http(cloud: ProgramRun, aws: InMoto, server: MotoServer,
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (policy,) = [p for p in cloud.of_type("aws:s3/bucketPolicy:BucketPolicy") if p.name == "lakehouse-warehouse"]
    statement = json.loads(policy.inputs["policy"])["Statement"]
    assert statement[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    with moto_server(tmp_path, tls=False) as plain:
        for name, value in plain.client_env(REGION).items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("AWS_CA_BUNDLE")
        session = boto3.session.Session()
        in_plain = InMoto(cloud, session, REGION)
        in_plain.key()
        in_plain.buckets(policies=False)
        s3 = session.client("s3", region_name=REGION)
        bucket = cloud.outputs["bucket"]
        s3.put_object(Bucket=bucket, Key="before-the-policy", Body=b"x")
        in_plain.bucket_policy(policy)
        assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == json.loads(in_plain.real(
            policy.inputs["policy"]))
        for call in (lambda: s3.put_object(Bucket=bucket, Key="over-http", Body=b"x"),
                     lambda: s3.get_object(Bucket=bucket, Key="before-the-policy")):
            with pytest.raises(ClientError) as refused:
                call()
            assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # moto's limit (module docstring): over TLS it refuses too. When this fails, moto evaluates the
    # condition: apply the bucket policies in the ``aws`` fixture and drop this block.
    monkeypatch.undo()
    tls = boto3.client("s3")
    artifacts = aws.id_of("lakehouse-artifacts")
    (artifacts_policy,) = [p for p in cloud.of_type("aws:s3/bucketPolicy:BucketPolicy") if p.name == "lakehouse-artifacts"]
    aws.bucket_policy(artifacts_policy)
    with pytest.raises(ClientError) as refused_over_tls:
        tls.put_object(Bucket=artifacts, Key="over-tls", Body=b"x")
    assert refused_over_tls.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


# -- the native target's bucket task (S3 API) --------------------------------------------------------------


def test_the_native_bucket_task_creates_the_bucket_once(aws_env: dict[str, str], server: MotoServer) -> None:
    env = {**aws_env, "LAKEHOUSE_S3_ACCESS_KEY": "native-key", "LAKEHOUSE_S3_SECRET_KEY": "native-secret",
           "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "lakehouse_platform.runtime.tasks", "create-bucket", "--endpoint", server.endpoint,
               "--bucket", "lakehouse-native-task", "--region", "us-east-1"]
    outputs = []
    for _ in range(2):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout.strip())
    assert outputs == ["bucket lakehouse-native-task created", "bucket lakehouse-native-task exists"]
    boto3.client("s3", region_name="us-east-1").head_bucket(Bucket="lakehouse-native-task")
