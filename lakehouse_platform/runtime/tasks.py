"""Small idempotent tasks the native target runs after a service is healthy (LocalService post_start).

``python -m lakehouse_platform.runtime.tasks create-bucket --endpoint URL --bucket NAME --region R``
Credentials come from LAKEHOUSE_S3_ACCESS_KEY / LAKEHOUSE_S3_SECRET_KEY (secret env of the service),
never from the command line.

``python -m lakehouse_platform.runtime.tasks create-topics --bootstrap HOST:PORT --topics JSON``
waits (bounded) until the broker answers, then creates the topics that are missing (replication 1,
the given partitions and configs); existing topics are left alone. One process for all of them:
a JVM per topic (kafka-topics.sh) took 3-9 s each under load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import boto3
import tenacity
from botocore.config import Config
from botocore.exceptions import ClientError


def s3_client(endpoint: str, region: str) -> Any:  # a botocore S3 client (its type is generated at run time)
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


def create_topics(bootstrap: str, topics: list[dict], wait_s: float = 120.0) -> str:
    """Create the missing ``topics`` ({name, partitions, configs}); returns what was done."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    retrying = tenacity.Retrying(stop=tenacity.stop_after_delay(wait_s), wait=tenacity.wait_fixed(0.5), reraise=True)
    try:  # KafkaException until the broker answers
        existing = set(retrying(lambda: admin.list_topics(timeout=5).topics))
    except Exception:  # noqa: BLE001 - the last attempt's error, said as the wait's outcome
        raise SystemExit(f"broker {bootstrap} did not answer within {wait_s:g} s") from None
    wanted = [t for t in topics if t["name"] not in existing]
    if wanted:
        futures = admin.create_topics([NewTopic(t["name"], num_partitions=int(t["partitions"]), replication_factor=1,
                                                config=dict(t.get("configs") or {})) for t in wanted],
                                      operation_timeout=30, request_timeout=30)
        for name, future in futures.items():
            try:
                future.result()
            except Exception as exc:  # noqa: BLE001 - a topic another client made meanwhile is fine
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise SystemExit(f"topic {name}: {exc}") from None
    return (f"topics: created {', '.join(t['name'] for t in wanted) or 'none'}; "
            f"{len(topics) - len(wanted)} existed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakehouse_platform.runtime.tasks")
    sub = parser.add_subparsers(dest="task", required=True)
    bucket = sub.add_parser("create-bucket", help="create the warehouse bucket if missing")
    bucket.add_argument("--endpoint", required=True)
    bucket.add_argument("--bucket", required=True)
    bucket.add_argument("--region", required=True)
    topics = sub.add_parser("create-topics", help="create the platform's Kafka topics if missing")
    topics.add_argument("--bootstrap", required=True)
    topics.add_argument("--topics", required=True, help="JSON list of {name, partitions, configs}")
    args = parser.parse_args(argv)
    if args.task == "create-topics":
        print(create_topics(args.bootstrap, json.loads(args.topics)))
    else:
        print(create_bucket(args.endpoint, args.bucket, args.region))
    return 0


if __name__ == "__main__":
    sys.exit(main())
