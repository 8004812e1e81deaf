"""The store's identities from the grants: each identity's SeaweedFS actions per bucket and prefix (rendered), and the
real ``weed`` (the native stack's build, from the artifact cache) allowing and refusing exactly those.

The rendering tests are unit tier. The store test is toolchain tier: it starts ``weed server`` with the rendered
identities file on free loopback ports (its own data directory), and tries get, put, list and delete as each
identity under each namespace's keys.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lakehouse_platform.config import load_platform
from lakehouse_platform.probes.support.fixture import free_port
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.seaweedfs import config as seaweedfs
from tests.support.stacks import stack_platform

ETL = {"access_key": "etl-access-key", "actions": ["Read", "Write", "List"], "secret_config_key": "s3EtlSecretKey",
       "grants": {"shop": ["read", "write"], "finance": ["read"]}}
WIDE = {"access_key": "wide-access-key", "actions": ["Read", "Write", "List"], "secret_config_key": "s3WideSecretKey",
        "grants": {"*": ["read", "write"], "finance": ["read"]}}


def team_platform() -> dict[str, Any]:
    platform = stack_platform("native")
    platform["governance"] = {"namespaces": ["finance"]}
    platform["identities"] = {"etl": ETL, "wide": WIDE}
    return platform


def test_each_identitys_store_actions_follow_its_grants_per_bucket_and_prefix():
    spec = load_platform(team_platform())
    assert {name: seaweedfs.store_actions(spec, name) for name in spec.identities} == {
        "platform": ["Admin", "Read", "Write", "List", "Tagging"],  # the store's administrator
        "writer": ["Read:warehouse", "List:warehouse", "Write:warehouse"],
        "reader": ["Read:warehouse", "List:warehouse"],
        "etl": ["Read:warehouse/shop/*", "Read:warehouse/finance/*", "List:warehouse/shop/*",
                "List:warehouse/finance/*", "Write:warehouse/shop/*"],
        "wide": ["Read:warehouse", "List:warehouse", "Write:warehouse"],
    }
    # What the store cannot say: a namespace narrowed below '*' keeps '*''s store rights (the review prints it).
    assert seaweedfs.wider_than_grants(spec, "wide") == {"finance": ["write"]}
    assert seaweedfs.wider_than_grants(spec, "etl") == {}
    config = json.loads(seaweedfs.s3_config(ServiceContext(spec, "seaweedfs")))
    assert {i["name"]: i["actions"] for i in config["identities"]}["etl"] == seaweedfs.store_actions(spec, "etl")


def test_a_catalog_that_lays_tables_out_under_a_prefix_scopes_the_grants_there_too():
    platform = stack_platform("lab")
    platform.setdefault("governance", {})["namespaces"] = ["shop", "finance"]  # the lab declares no tables
    platform.setdefault("identities", {})["etl"] = ETL
    spec = load_platform(platform)
    assert seaweedfs.table_prefixes(spec) == ["", "polaris/"]  # the fixture's root, Polaris's own prefix
    assert "Write:warehouse/polaris/shop/*" in seaweedfs.store_actions(spec, "etl")


# -- the real store -------------------------------------------------------------------------------------------

SECRETS = {name: f"{name}-test-secret" for name in ("platform", "writer", "reader", "etl", "wide")}


@contextlib.contextmanager
def running_store(tmp: Path) -> Iterator[str]:
    from lakehouse_platform.artifacts import cache

    spec = load_platform(team_platform())
    found = cache.lookup(f"seaweedfs:{spec.services['seaweedfs'].version}")
    if found is None or found.path is None:
        pytest.skip("no weed build in the artifact cache (make artifacts)")
    text = seaweedfs.s3_config(ServiceContext(spec, "seaweedfs"))
    for name, value in SECRETS.items():
        text = text.replace(f"${{secret:s3-secret-key-{name}}}", value)
    config = tmp / "s3.json"
    config.write_text(text)
    ports = {name: free_port() for name in ("master", "master-grpc", "volume", "volume-grpc", "filer", "filer-grpc",
                                            "s3", "s3-grpc")}
    data = tmp / "data"
    data.mkdir()
    argv = [str(found.path), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
            f"-master.port={ports['master']}", f"-master.port.grpc={ports['master-grpc']}", "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64", f"-volume.port={ports['volume']}",
            f"-volume.port.grpc={ports['volume-grpc']}", "-volume.max=0", "-filer",
            f"-filer.port={ports['filer']}", f"-filer.port.grpc={ports['filer-grpc']}", "-s3",
            f"-s3.port={ports['s3']}", f"-s3.port.grpc={ports['s3-grpc']}", f"-s3.config={config}",
            "-s3.port.iceberg=0", "-s3.port.lance=0"]
    log = (tmp / "weed.log").open("w")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               start_new_session=True, env={**os.environ, "GOMEMLIMIT": "256MiB"})
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    try:
        admin = client(endpoint, "platform")
        deadline = time.monotonic() + 90
        while True:
            try:
                admin.create_bucket(Bucket="warehouse")
                break
            except Exception:  # noqa: BLE001 - not serving yet (connection refused, 503): try again
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError("weed did not serve S3: " + (tmp / "weed.log").read_text()[-2000:]) from None
                time.sleep(1)
        yield endpoint
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def client(endpoint: str, identity: str) -> Any:
    import boto3
    from botocore.config import Config

    spec_keys = {"platform": "lab-access-key", "writer": "writer-access-key", "reader": "reader-access-key",
                 "etl": "etl-access-key", "wide": "wide-access-key"}
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=spec_keys[identity],
                        aws_secret_access_key=SECRETS[identity],
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def attempt(action: Any) -> str:
    from botocore.exceptions import ClientError

    try:
        action()
    except ClientError as exc:
        return "denied" if exc.response["Error"]["Code"] in ("AccessDenied", "403") else exc.response["Error"]["Code"]
    return "allowed"


@pytest.mark.toolchain
def test_the_real_store_allows_each_identity_exactly_its_grants_per_namespace(tmp_path):
    with running_store(tmp_path) as endpoint:
        admin = client(endpoint, "platform")
        existing_of = {ns: f"{ns}/t/data/a.parquet" for ns in ("shop", "finance", "other")}
        for key in existing_of.values():
            admin.put_object(Bucket="warehouse", Key=key, Body=b"x")
        observed = {}
        for who in ("etl", "reader", "wide"):
            s3 = client(endpoint, who)
            for namespace in ("shop", "finance", "other"):
                key, existing = f"{namespace}/t/data/{who}.parquet", existing_of[namespace]
                observed[who, namespace] = {
                    "get": attempt(lambda s3=s3, existing=existing: s3.get_object(Bucket="warehouse", Key=existing)),
                    "list": attempt(lambda s3=s3, ns=namespace: s3.list_objects_v2(Bucket="warehouse",
                                                                                    Prefix=f"{ns}/")),
                    "put": attempt(lambda s3=s3, key=key: s3.put_object(Bucket="warehouse", Key=key, Body=b"y")),
                    "delete": attempt(lambda s3=s3, existing=existing: s3.delete_object(Bucket="warehouse",
                                                                                       Key=existing + ".none")),
                }
            observed[who, "bucket root"] = {"list": attempt(lambda s3=s3: s3.list_objects_v2(Bucket="warehouse"))}
        remaining = sorted(o["Key"] for o in admin.list_objects_v2(Bucket="warehouse").get("Contents", []))
    everything = {"get": "allowed", "list": "allowed", "put": "allowed", "delete": "allowed"}
    reads = {"get": "allowed", "list": "allowed", "put": "denied", "delete": "denied"}
    nothing = dict.fromkeys(everything, "denied")
    assert observed == {
        ("etl", "shop"): everything, ("etl", "finance"): reads, ("etl", "other"): nothing,
        ("etl", "bucket root"): {"list": "denied"},  # a scoped identity lists only under its namespaces
        ("reader", "shop"): reads, ("reader", "finance"): reads, ("reader", "other"): reads,
        ("reader", "bucket root"): {"list": "allowed"},
        # The store cannot narrow '*': finance keeps '*''s write at the store (wider_than_grants says so).
        ("wide", "shop"): everything, ("wide", "finance"): everything, ("wide", "other"): everything,
        ("wide", "bucket root"): {"list": "allowed"},
    }
    assert "finance/t/data/etl.parquet" not in remaining and "other/t/data/etl.parquet" not in remaining
