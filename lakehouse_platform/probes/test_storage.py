"""Probe 3 — storage honours conditional writes (storage).

Iceberg catalogs and writers that commit through the object store rely on the store refusing a
write whose condition does not hold. K concurrent ``If-None-Match: *`` PUTs of one new key: exactly
one wins (200), every other one gets 412. ``If-Match`` with a stale ETag gets 412; with the current
ETag it succeeds.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from botocore.exceptions import ClientError

from lakehouse_platform.probes.support.stack import Stack, fail

# Safe: its objects are under the warehouse's _probes/ prefix, deleted before it ends.
pytestmark = [pytest.mark.storage, pytest.mark.safe]

K = 8


def _status(exc: ClientError) -> tuple[int, str]:
    return exc.response["ResponseMetadata"]["HTTPStatusCode"], exc.response.get("Error", {}).get("Code", "?")


def test_concurrent_if_none_match_puts_have_one_winner(stack: Stack, figure, say):
    s3 = stack.s3(retries=1)  # no client retries: a retried PUT would blur the count
    bucket = stack.bucket
    key = f"{stack.warehouse_prefixes[0]}_probes/conditional/{stack.run_id}-{uuid.uuid4().hex}"
    barrier = threading.Barrier(K)
    results: list[tuple[int, int, str]] = []
    lock = threading.Lock()

    def put(writer: int) -> None:
        body = f"writer {writer}".encode()
        barrier.wait()
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
            outcome = (writer, 200, "OK")
        except ClientError as exc:
            outcome = (writer, *_status(exc))
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(K)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        winners = [w for w, code, _ in results if code == 200]
        codes = sorted(code for _, code, _ in results)
        stored = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode() if winners else None
    finally:
        try:
            s3.delete_object(Bucket=bucket, Key=key)
        except ClientError:
            pass
    tally = {code: codes.count(code) for code in sorted(set(codes))}
    say(f"== {K} concurrent If-None-Match PUTs of s3://{bucket}/{key}: {tally}")
    figure(f"{K} PUTs If-None-Match:*: {tally}")
    evidence = {"results (writer, status, code)": sorted(results), "stored body": stored}
    if len(winners) != 1:
        fail(stack, "storage", f"{len(winners)} of {K} conditional PUTs succeeded (exactly one must)", evidence)
    if stored != f"writer {winners[0]}":
        fail(stack, "storage", "the stored object is not the winner's body", evidence)
    losers = [code for _, code, _ in results if code != 200]
    if any(code != 412 for code in losers):
        # 409 (ConditionalRequestConflict) is AWS's answer to a race still in flight: a loss, not a 412.
        if any(code not in (412, 409) for code in losers):
            fail(stack, "storage", "a losing conditional PUT got neither 412 nor 409", evidence)
        say(f"== note: some losers got 409 ConditionalRequestConflict instead of 412: {tally}")


def test_if_match_with_a_stale_etag_is_refused(stack: Stack, figure, say):
    s3 = stack.s3(retries=1)
    bucket = stack.bucket
    key = f"{stack.warehouse_prefixes[0]}_probes/conditional/{stack.run_id}-ifmatch-{uuid.uuid4().hex}"
    try:
        first = s3.put_object(Bucket=bucket, Key=key, Body=b"v1")["ETag"]
        second = s3.put_object(Bucket=bucket, Key=key, Body=b"v2", IfMatch=first)["ETag"]
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=b"v3", IfMatch=first)
            stale = (200, "OK")
        except ClientError as exc:
            stale = _status(exc)
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=b"v1-again", IfNoneMatch="*")
            exists = (200, "OK")
        except ClientError as exc:
            exists = _status(exc)
        stored = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    finally:
        try:
            s3.delete_object(Bucket=bucket, Key=key)
        except ClientError:
            pass
    say(f"== If-Match current ETag: 200; If-Match stale ETag: {stale[0]} {stale[1]}; "
        f"If-None-Match on an existing key: {exists[0]} {exists[1]}")
    figure(f"If-Match stale -> {stale[0]}; If-None-Match existing -> {exists[0]}; current ETag -> 200")
    evidence = {"etags": [first, second], "stale If-Match": stale, "If-None-Match existing": exists,
                "stored": stored.decode(errors="replace")}
    if stale[0] != 412:
        fail(stack, "storage", "a PUT with a stale If-Match ETag was not refused with 412", evidence)
    if exists[0] != 412:
        fail(stack, "storage", "If-None-Match: * on an existing key was not refused with 412", evidence)
    if stored != b"v2":
        fail(stack, "storage", "a refused conditional PUT changed the object", evidence)
