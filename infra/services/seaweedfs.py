"""SeaweedFS: the S3-compatible object store holding every byte of table data (storage layer)."""

from __future__ import annotations

import json

from infra.services.base import ContainerPlan, ServiceContext, secret

NAME = "seaweedfs"

DEFAULT = {
    "layer": "storage",
    "role": "S3-compatible object store, single process, with IAM and STS",
    "version": "4.45",
    "image": "chrislusf/seaweedfs:4.45",
    "ports": {
        "s3": {"internal": 8333, "external": 8333},
        "master": {"internal": 9333, "external": 9333},
        "filer": {"internal": 8888, "external": 8888},
    },
    "health": {"kind": "http", "port": "s3", "path": "/healthz", "command": ["CMD", "wget", "-qO-", "http://127.0.0.1:8333/healthz"]},
    "memory": "512MiB",
}

BUCKET_JOB = "seaweedfs-bucket"

BUCKET_JOB_DEFAULT = {
    "layer": "storage",
    "kind": "job",
    "role": "creates the warehouse bucket once the store is up",
    "version": "4.45",
    "image": "chrislusf/seaweedfs:4.45",
    "memory": "128MiB",
    "depends_on": [NAME],
}


def s3_config(ctx: ServiceContext) -> str:
    """SeaweedFS S3 identities file; secret keys are placeholders the target fills with secrets."""
    identities = [
        {
            "name": name,
            "credentials": [{"accessKey": identity.access_key, "secretKey": secret(f"s3-secret-key-{name}")}],
            "actions": list(identity.actions),
        }
        for name, identity in ctx.spec.identities.items()
    ]
    return json.dumps({"identities": identities}, indent=2)


def container(ctx: ServiceContext) -> ContainerPlan:
    """One `weed server` with master, volume, filer and S3 gateway; data on a named volume."""
    return ContainerPlan(
        command=["server", "-dir=/data", "-s3", "-s3.config=/etc/seaweedfs/s3.json", "-master.volumeSizeLimitMB=1024"],
        uploads={"/etc/seaweedfs/s3.json": s3_config(ctx)},
        volumes={"data": "/data"},
    )


def bucket_job(ctx: ServiceContext) -> ContainerPlan:
    """Creates the warehouse bucket through `weed shell` against the store's master."""
    master = ctx.address(NAME, "master")
    bucket = ctx.spec.storage.bucket
    return ContainerPlan(
        command=["sh", "-c", f"echo 's3.bucket.create -name {bucket}' | weed shell -master={master}"],
    )
