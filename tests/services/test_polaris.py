"""Polaris: its catalog job run for real, and its servers on aws under Pulumi mocks.

The job is the exact script a target (docker, aws) renders, run under /bin/sh with curl against a local HTTP server
answering as Polaris 1.7.0 does (tests.support.job_scripts): a first run creates, a second run finds everything done
and still succeeds, an error fails the job with the status and body. On aws two replicas share one token key.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from infra.services import polaris
from infra.services.plans import ContainerHost
from infra.services.polaris import aws as polaris_aws
from tests.support.aws_graph import container_of_task, ecs_service, named
from tests.support.harness import SECRET_KEY, SECRET_SIG, ProgramRun
from tests.support.job_scripts import ROOT_SECRET, Answer, FakeApi, cloud_ctx, filled, lab_ctx, run_script

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="the job scripts call curl")


# -- the catalog job -----------------------------------------------------------------------------------------


class PolarisApi:
    """Answers as Polaris 1.7.0 does: 409 for a catalog that exists (IcebergExceptionMapper)."""

    def __init__(self, token_failures: int = 0, create_status: int | None = None, token_status: int = 200):
        self.catalogs: dict[str, Any] = {}
        self.grants: list[Any] = []
        self.token_failures = token_failures
        self.create_status = create_status
        self.token_status = token_status

    def __call__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        if path == "/api/catalog/v1/oauth/tokens" and method == "POST":
            if self.token_failures:
                self.token_failures -= 1
                return Answer(503, {"message": "no healthy upstream"})
            form = parse_qs(body.decode())
            good = form == {"grant_type": ["client_credentials"], "client_id": ["root"],
                            "client_secret": [ROOT_SECRET], "scope": ["PRINCIPAL_ROLE:ALL"]}
            if self.token_status != 200 or not good or headers.get("polaris-realm") != "POLARIS":
                return Answer(self.token_status if self.token_status != 200 else 401, {"error": "unauthorized_client"})
            return Answer(200, {"access_token": "tok-123", "token_type": "bearer", "expires_in": 3600})
        if headers.get("authorization") != "Bearer tok-123":
            return Answer(401, {"error": {"message": "not authorized"}})
        if path == "/api/management/v1/catalogs" and method == "POST":
            if self.create_status:
                return Answer(self.create_status, {"error": {"message": "boom: storage rejected"}})
            request = json.loads(body)
            name = request["catalog"]["name"]
            if name in self.catalogs:
                return Answer(409, {"error": {"message": f"Catalog '{name}' already exists", "type": "AlreadyExists"}})
            self.catalogs[name] = request
            return Answer(201, request["catalog"])
        if path == "/api/management/v1/catalogs/warehouse/catalog-roles/catalog_admin/grants" and method == "PUT":
            self.grants.append(json.loads(body))
            return Answer(201)
        return Answer(404, {"error": {"message": f"no route {method} {path}"}})


def polaris_job(api: FakeApi, target: str = "docker") -> tuple[str, dict[str, str]]:
    if target == "docker":
        plan = polaris.container.catalog_job(lab_ctx(polaris.CATALOG_JOB), ContainerHost(state_dir=Path("/nonexistent")))
        return plan.command[0], filled(plan.env, POLARIS_URL=api.url)
    ecs = polaris_aws.catalog_ecs(cloud_ctx(polaris.CATALOG_JOB))
    return ecs.command[0], filled(ecs.env, POLARIS_URL=api.url, VENDING_ROLE_ARN="arn:aws:iam::1:role/vending",
                                  KMS_KEY_ARN="arn:aws:kms:eu-west-1:1:key/k")


def test_polaris_catalog_job_creates_the_catalog_and_grant_then_finds_them_done(serve) -> None:
    fake = PolarisApi()
    api = serve(fake)
    script, env = polaris_job(api)
    first = run_script(script, env)
    assert first.returncode == 0, first.stderr
    assert "create catalog warehouse: done (HTTP 201)" in first.stdout
    created = fake.catalogs["warehouse"]
    assert created == {"catalog": {
        "name": "warehouse", "type": "INTERNAL", "readOnly": False,
        "properties": {"default-base-location": "s3://warehouse/polaris/"},
        "storageConfigInfo": {
            "storageType": "S3", "allowedLocations": ["s3://warehouse/polaris/"],
            "endpoint": "http://localhost:8333", "endpointInternal": "http://seaweedfs:8333",
            "pathStyleAccess": True, "stsUnavailable": True, "region": "us-east-1"}}}
    assert fake.grants == [{"grant": {"type": "catalog", "privilege": "CATALOG_MANAGE_CONTENT"}}]

    again = run_script(script, env)  # idempotent: the catalog exists (409), the grant is re-applied
    assert again.returncode == 0, again.stderr
    assert "create catalog warehouse: already done (HTTP 409)" in again.stdout
    assert len(fake.grants) == 2 and again.stdout.rstrip().endswith("all steps done")
    assert ROOT_SECRET not in first.stdout + first.stderr + again.stdout + again.stderr


def test_polaris_catalog_job_waits_for_polaris_but_not_for_a_refusal(serve) -> None:
    api = serve(PolarisApi(token_failures=1))
    script, env = polaris_job(api)
    waited = run_script(script, env)
    assert waited.returncode == 0, waited.stderr
    assert sum(1 for r in api.requests if r[1].endswith("/oauth/tokens")) == 2  # 503, then the token

    refused = serve(PolarisApi(token_status=401))
    script, env = polaris_job(refused)
    started = time.monotonic()
    failed = run_script(script, env)
    assert failed.returncode == 1 and time.monotonic() - started < 5  # a 401 does not become a 200 by waiting
    assert "Polaris token endpoint: HTTP 401" in failed.stderr


def test_polaris_catalog_job_fails_with_the_status_and_body(serve) -> None:
    fake = PolarisApi(create_status=500)
    api = serve(fake)
    script, env = polaris_job(api)
    failed = run_script(script, env)
    assert failed.returncode == 1
    assert "create catalog warehouse: HTTP 500" in failed.stderr and "boom: storage rejected" in failed.stderr
    assert fake.grants == []  # nothing after the failed step


def test_polaris_catalog_job_on_aws_names_the_vending_role_and_the_key(serve) -> None:
    fake = PolarisApi()
    api = serve(fake)
    script, env = polaris_job(api, target="aws")
    done = run_script(script, env)
    assert done.returncode == 0, done.stderr
    storage = fake.catalogs["warehouse"]["catalog"]["storageConfigInfo"]
    assert storage == {"storageType": "S3", "allowedLocations": ["s3://lakehouse-warehouse-prod/polaris/"],
                       "roleArn": "arn:aws:iam::1:role/vending", "region": "eu-west-1",
                       "currentKmsKey": "arn:aws:kms:eu-west-1:1:key/k", "allowedKmsKeys": ["arn:aws:kms:eu-west-1:1:key/k"]}


# -- aws, under Pulumi mocks ---------------------------------------------------------------------------------


def test_polaris_replicas_share_one_token_key_and_support_s3_only(cloud: ProgramRun) -> None:
    """Issue #13 item 11: two tasks behind the load balancer, one signing key from Secrets Manager."""
    assert ecs_service(cloud, "polaris").inputs["desiredCount"] == 2
    definition = container_of_task(cloud, "lakehouse-polaris")
    env = {e["name"]: e["value"] for e in definition["environment"]}
    assert "-Dpolaris.authentication.token-broker.type=symmetric-key" in env["JAVA_OPTS_APPEND"]
    assert env['polaris.features."SUPPORTED_CATALOG_STORAGE_TYPES"'] == '["S3"]'
    secrets = {s["name"]: s["valueFrom"] for s in definition["secrets"]}
    assert secrets["polaris.authentication.token-broker.symmetric-key.secret"] == (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-token-key-AbCdEf")
    version = named(cloud, "aws:secretsmanager/secretVersion:SecretVersion", "lakehouse-polaris-token-key-value")
    assert version.inputs["secretString"] == {SECRET_KEY: SECRET_SIG, "value": "test-polaris-token-signing-key"}
