"""Small idempotent tasks the native target runs after a service is healthy (LocalService post_start).

``python -m infra.targets.native.tasks create-bucket --endpoint URL --bucket NAME --region R``
Credentials come from LAKEHOUSE_S3_ACCESS_KEY / LAKEHOUSE_S3_SECRET_KEY (secret env of the service),
never from the command line.
"""

from __future__ import annotations

import argparse
import os
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def s3_client(endpoint: str, region: str):
    """A path-style S3 client for the lab store, with the service's own credentials."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=os.environ["LAKEHOUSE_S3_ACCESS_KEY"],
        aws_secret_access_key=os.environ["LAKEHOUSE_S3_SECRET_KEY"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 10, "mode": "standard"}),
    )


def create_bucket(endpoint: str, bucket: str, region: str) -> str:
    """Create ``bucket`` unless it exists; returns what was done."""
    s3 = s3_client(endpoint, region)
    try:
        s3.head_bucket(Bucket=bucket)
        return f"bucket {bucket} exists"
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
    s3.create_bucket(Bucket=bucket)
    return f"bucket {bucket} created"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.targets.native.tasks")
    sub = parser.add_subparsers(dest="task", required=True)
    bucket = sub.add_parser("create-bucket", help="create the warehouse bucket if missing")
    bucket.add_argument("--endpoint", required=True)
    bucket.add_argument("--bucket", required=True)
    bucket.add_argument("--region", required=True)
    args = parser.parse_args(argv)
    print(create_bucket(args.endpoint, args.bucket, args.region))
    return 0


if __name__ == "__main__":
    sys.exit(main())
