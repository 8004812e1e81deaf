"""The deployment steps' scripts, run for real: the job scripts docker and aws run, against local fakes.

The Polaris catalog job and the Lakekeeper warehouse job are shell scripts calling the catalogs'
management APIs (infra/services/steps.py). Here the exact script a target renders runs under
/bin/sh with curl against a small HTTP server on 127.0.0.1 that answers as the upstream API does
(status codes and error types read in Polaris 1.7.0 and Lakekeeper v0.13.3): a first run creates,
a second run finds everything done and still succeeds, an error fails the job with the status and
body. The SeaweedFS bucket script runs against a stub ``weed`` that answers as ``weed shell`` does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from infra.config import load_platform
from infra.services import ServiceContext, lakekeeper, polaris, seaweedfs
from infra.services.lakekeeper import aws as lakekeeper_aws
from infra.services.plans import ContainerHost
from infra.services.polaris import aws as polaris_aws
from tests.support.stacks import stack_platform

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="the job scripts call curl")

# Secrets with every character a shell or JSON could trip on.
ROOT_SECRET = 'r00t&secret="+ $HOME `x` \\'
S3_SECRET = 's3"secret\\with$chars'


@dataclass
class Answer:
    status: int
    body: Any = None


@dataclass
class FakeApi:
    """An HTTP server on 127.0.0.1 whose ``route`` decides every answer; records each request."""

    route: Callable[[str, str, dict[str, str], bytes], Answer]
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str, str, dict[str, str], bytes], Answer]], FakeApi]]:
    servers: list[ThreadingHTTPServer] = []

    def start(route: Callable[[str, str, dict[str, str], bytes], Answer]) -> FakeApi:
        api = FakeApi(route)

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                api.requests.append((self.command, self.path, headers, body))
                answer = api.route(self.command, self.path, headers, body)
                payload = b"" if answer.body is None else json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _any

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        api.url = f"http://127.0.0.1:{server.server_address[1]}"
        return api

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def run_script(script: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    return subprocess.run(["/bin/sh", "-c", script], env={**base, **env}, capture_output=True, text=True,
                          timeout=timeout, check=False)


def lab_ctx(name: str) -> ServiceContext:
    return ServiceContext(load_platform(stack_platform("lab")), name)


def cloud_ctx(name: str) -> ServiceContext:
    return ServiceContext(load_platform(stack_platform("cloud")), name)


def filled(env: dict[str, str], **overrides: str) -> dict[str, str]:
    """A plan's environment as the container gets it (placeholders filled), with overrides."""
    values = {"${secret:polaris-root-secret}": ROOT_SECRET, "${secret:s3-access-key}": "lab-access-key",
              "${secret:s3-secret-key}": S3_SECRET}
    return {**{k: values.get(v, v) for k, v in env.items()}, **overrides}


# -- Polaris: the warehouse catalog ---------------------------------------------------------------


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


# -- Lakekeeper: bootstrap and the warehouse ------------------------------------------------------


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


# -- SeaweedFS: the bucket job ----------------------------------------------------------------------

# Answers as `weed shell` does (weed/shell): one bucket per line in s3.bucket.list, and a failed
# command's error on stderr with exit status 0 (processEachCmd prints it and goes on).
FAKE_WEED = r"""#!/bin/sh
state="$FAKE_WEED_STATE"
echo "$*" >> "$state.args"
read -r command rest
case "$command" in
  s3.bucket.list) while read -r b; do printf '  %s\tsize:0\tlogical:0\tchunk:0\n' "$b"; done < "$state" ;;
  s3.bucket.create)
    if [ "${FAKE_WEED_FAIL:-}" = 1 ]; then echo "error: create bucket: rpc error: filer unreachable" >&2
    else echo "create bucket under /buckets"; echo "${rest#-name }" >> "$state"; fi ;;
esac
exit 0
"""


@pytest.fixture
def weed(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "weed"
    stub.write_text(FAKE_WEED)
    stub.chmod(0o755)
    state = tmp_path / "buckets"
    state.write_text("")
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_WEED_STATE": str(state)}


def bucket_script() -> str:
    plan = seaweedfs.container.bucket_job(lab_ctx(seaweedfs.BUCKET_JOB), ContainerHost(state_dir=Path("/x")))
    assert plan.entrypoint == ["/bin/sh", "-c"]
    return plan.command[0]


def test_bucket_job_creates_the_bucket_once_and_checks_it(weed: dict[str, str]) -> None:
    created = run_script(bucket_script(), weed)
    assert created.returncode == 0, created.stderr
    assert "bucket warehouse created" in created.stdout
    again = run_script(bucket_script(), weed)
    assert again.returncode == 0 and "bucket warehouse exists" in again.stdout
    calls = Path(weed["FAKE_WEED_STATE"] + ".args").read_text().splitlines()
    assert calls[0] == "shell -master=seaweedfs:9333 -filer=seaweedfs:8888"
    assert len(calls) == 3 + 1  # list, create, list; then one list


def test_bucket_job_fails_when_weed_shell_swallows_the_error(weed: dict[str, str]) -> None:
    failed = run_script(bucket_script(), {**weed, "FAKE_WEED_FAIL": "1"})
    assert failed.returncode == 1
    assert "bucket warehouse is missing after s3.bucket.create" in failed.stderr
    assert "filer unreachable" in failed.stdout  # weed's own error is in the job's log
