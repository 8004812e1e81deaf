"""Lakekeeper: its warehouse job run for real, and its server on aws under Pulumi mocks.

The job is the exact script a target (docker, aws) renders, run under /bin/sh with curl against a local HTTP server
answering as Lakekeeper v0.13.3 does (tests.support.job_scripts): a first run bootstraps and creates, a second run
finds both done and still succeeds, another error fails the job. On aws it may use its task identity for the warehouse.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lakehouse_platform.services.lakekeeper import aws as lakekeeper_aws
from lakehouse_platform.services.lakekeeper import definition as lakekeeper
from lakehouse_platform.services.plans import ContainerHost
from tests.support.job_scripts import S3_SECRET, Answer, FakeApi, cloud_ctx, filled, lab_ctx, run_script

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="the job scripts call curl")


# -- the warehouse job ---------------------------------------------------------------------------------------


class LakekeeperApi:
    """Answers as Lakekeeper v0.13.3 does: 400 CatalogAlreadyBootstrapped, 409 WarehouseAlreadyExists."""

    def __init__(self, bootstrap_error: str = "CatalogAlreadyBootstrapped"):
        self.bootstrapped = False
        self.warehouses: dict[str, Any] = {}
        self.bootstrap_error = bootstrap_error

    def __call__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        if path == "/health" and method == "GET":
            return Answer(200, {"health": [{"name": "postgres", "status": "healthy"}]})
        if path == "/management/v1/bootstrap" and method == "POST":
            if json.loads(body) != {"accept-terms-of-use": True}:
                return Answer(400, {"error": {"type": "InvalidBody"}})
            if self.bootstrapped:
                return Answer(400, {"error": {"code": 400, "message": "Catalog is not open for bootstrap",
                                              "type": self.bootstrap_error}})
            self.bootstrapped = True
            return Answer(204)
        if path == "/management/v1/warehouse" and method == "POST":
            request = json.loads(body)
            name = request["warehouse-name"]
            if name in self.warehouses:
                return Answer(409, {"error": {"code": 409, "type": "WarehouseAlreadyExists"}})
            self.warehouses[name] = request
            return Answer(201, {"warehouse-id": "0190-...", "name": name})
        return Answer(404, {"error": {"type": "NotFound"}})


def lakekeeper_job(api: FakeApi, target: str = "docker") -> tuple[str, dict[str, str]]:
    if target == "docker":
        plan = lakekeeper.container.warehouse_job(lab_ctx(lakekeeper.WAREHOUSE_JOB), ContainerHost(state_dir=Path("/x")))
        return plan.command[0], filled(plan.env, LAKEKEEPER_URL=api.url)
    ecs = lakekeeper_aws.warehouse_ecs(cloud_ctx(lakekeeper.WAREHOUSE_JOB))
    return ecs.command[0], filled(ecs.env, LAKEKEEPER_URL=api.url, VENDING_ROLE_ARN="arn:aws:iam::1:role/vending",
                                  KMS_KEY_ARN="arn:aws:kms:eu-west-1:1:key/k")


def test_lakekeeper_warehouse_job_bootstraps_and_creates_then_finds_both_done(serve) -> None:
    fake = LakekeeperApi()
    api = serve(fake)
    script, env = lakekeeper_job(api)
    first = run_script(script, env)
    assert first.returncode == 0, first.stderr
    assert fake.bootstrapped and "bootstrap Lakekeeper: done (HTTP 204)" in first.stdout
    assert fake.warehouses["warehouse"] == {
        "warehouse-name": "warehouse", "project-id": "00000000-0000-0000-0000-000000000000",
        "storage-profile": {"type": "s3", "bucket": "warehouse", "key-prefix": "lakekeeper", "flavor": "s3-compat",
                            "endpoint": "http://localhost:8333", "path-style-access": True, "region": "us-east-1",
                            "sts-enabled": False},
        "storage-credential": {"type": "s3", "credential-type": "access-key", "access-key-id": "lab-access-key",
                               "secret-access-key": S3_SECRET},
    }
    again = run_script(script, env)
    assert again.returncode == 0, again.stderr
    assert "bootstrap Lakekeeper: already done" in again.stdout
    assert "create warehouse warehouse: already done (HTTP 409)" in again.stdout
    assert S3_SECRET not in first.stdout + first.stderr + again.stdout + again.stderr


def test_lakekeeper_warehouse_job_fails_on_another_bootstrap_error(serve) -> None:
    fake = LakekeeperApi(bootstrap_error="InvalidServerId")
    fake.bootstrapped = True
    api = serve(fake)
    script, env = lakekeeper_job(api)
    failed = run_script(script, env)
    assert failed.returncode == 1 and "bootstrap Lakekeeper: HTTP 400" in failed.stderr
    assert "InvalidServerId" in failed.stderr and fake.warehouses == {}


def test_lakekeeper_warehouse_job_on_aws_uses_the_task_identity_through_the_vending_role(serve) -> None:
    fake = LakekeeperApi()
    api = serve(fake)
    script, env = lakekeeper_job(api, target="aws")
    done = run_script(script, env)
    assert done.returncode == 0, done.stderr
    request = fake.warehouses["warehouse"]
    assert request["storage-credential"] == {"type": "s3", "credential-type": "aws-system-identity"}
    assert request["storage-profile"] == {
        "type": "s3", "bucket": "lakehouse-warehouse-prod", "key-prefix": "lakekeeper", "flavor": "aws",
        "region": "eu-west-1", "sts-enabled": True, "assume-role-arn": "arn:aws:iam::1:role/vending",
        "sts-role-arn": "arn:aws:iam::1:role/vending", "aws-kms-key-arn": "arn:aws:kms:eu-west-1:1:key/k"}


# -- aws, under Pulumi mocks ---------------------------------------------------------------------------------


def test_lakekeeper_may_use_its_task_identity_for_the_warehouse() -> None:
    """Its plan on aws, as it would run once the refusal is lifted (ADR 0013): the stacks run no Lakekeeper now."""
    env = lakekeeper_aws.ecs(cloud_ctx(lakekeeper.NAME)).env
    assert env["LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS"] == "true"  # off by default: no warehouse without it
    assert env["LAKEKEEPER__S3_REQUIRE_EXTERNAL_ID_FOR_SYSTEM_CREDENTIALS"] == "false"


def test_lakekeeper_is_refused_on_every_target_with_its_reason() -> None:
    """ADR 0013: unauthenticated it would let every client create, commit to and drop every table; enabling it on
    the lab or the cloud is refused with the key and the reason, and the review says so."""
    from lakehouse_platform.config import ConfigError, load_platform
    from lakehouse_platform.review.ownership import catalog_access
    from tests.support.stacks import stack_platform

    for stack, target in (("lab", "docker"), ("cloud", "aws")):
        platform = stack_platform(stack)
        platform["services"]["lakekeeper"] = {"enabled": True}
        with pytest.raises(ConfigError) as refused:
            load_platform(platform)
        assert (f"lakehouse:platform.services.lakekeeper.enabled: lakekeeper does not run on the {target} target "
                f"({lakekeeper.REFUSED}); disable it") in str(refused.value)
        rows = {row["catalog"]: row for row in catalog_access(load_platform(stack_platform(stack)))}
        assert rows["lakekeeper"]["clients"] == f"not on {target}: {lakekeeper.REFUSED}"
        assert rows["polaris"]["clients"].startswith("each identity is its own principal")
