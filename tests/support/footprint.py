"""What the safe probes must leave as they found it on a deployed stack: its catalog (namespaces, tables, each table's
snapshots with their summaries) and every object under the warehouse, but for what the platform's own streaming
writers (the Flink job, the CDC sink) commit meanwhile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: What the platform's own streaming writers put in a snapshot summary: they keep committing while probes run.
STREAMING_COMMIT_KEYS = ("flink.job-id", "kafka.connect.commit-id")


@dataclass
class Footprint:
    """A stack's catalog and store at one moment."""

    namespaces: set[str]
    snapshots: dict[str, dict[int, dict[str, str]]]  # table -> snapshot id -> summary
    locations: dict[str, str]  # table -> its location
    objects: set[str]  # s3://bucket/key


def footprint(outputs: dict[str, Any]) -> Footprint:
    """The catalog and the store of the stack whose outputs these are, as the platform's identity sees them."""
    from lakehouse_platform.probes.support.stack import Stack

    stack = Stack(outputs=outputs)
    catalog = stack.catalog(identity=stack.platform_identity)  # the platform's identity sees every namespace
    namespaces = {".".join(ns) for ns in catalog.list_namespaces()}
    snapshots, locations = {}, {}
    for namespace in namespaces:
        for ident in catalog.list_tables(namespace):
            table = catalog.load_table(ident)
            name = ".".join(ident)
            snapshots[name] = {s.snapshot_id: dict(s.summary.additional_properties if s.summary else {})
                               for s in table.snapshots()}
            locations[name] = table.location().rstrip("/") + "/"
    s3, objects = stack.s3(identity=stack.platform_identity), set()
    for prefix in stack.warehouse_prefixes:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=stack.bucket, Prefix=prefix):
            objects |= {f"s3://{stack.bucket}/{o['Key']}" for o in page.get("Contents", [])}
    return Footprint(namespaces, snapshots, locations, objects)


def leftovers(before: Footprint, after: Footprint) -> list[str]:
    """What changed between the two footprints that the platform's own streaming writers did not do."""
    found = []
    if after.namespaces != before.namespaces:
        found.append(f"namespaces: added {sorted(after.namespaces - before.namespaces)}, "
                     f"removed {sorted(before.namespaces - after.namespaces)}")
    if set(after.snapshots) != set(before.snapshots):
        found.append(f"tables: added {sorted(set(after.snapshots) - set(before.snapshots))}, "
                     f"removed {sorted(set(before.snapshots) - set(after.snapshots))}")
    streamed = set()  # tables a streaming writer committed to during the run: the files under them are its own
    for table, known in before.snapshots.items():
        added = {sid: summary for sid, summary in after.snapshots.get(table, {}).items() if sid not in known}
        foreign = {sid: summary for sid, summary in added.items()
                   if not any(key in summary for key in STREAMING_COMMIT_KEYS)}
        if foreign:
            found.append(f"{table}: snapshots by something else than the platform's streaming writers: {foreign}")
        if added:
            streamed.add(before.locations[table])
        if set(known) - set(after.snapshots.get(table, {})):
            found.append(f"{table}: snapshots gone: {sorted(set(known) - set(after.snapshots.get(table, {})))}")

    def written_by_streams(key: str) -> bool:
        return any(key.startswith(location) for location in streamed)

    # A streaming writer also deletes files of its own (Flink's committer its checkpoint manifests once committed).
    added_objects = sorted(k for k in after.objects - before.objects if not written_by_streams(k))
    removed_objects = sorted(k for k in before.objects - after.objects if not written_by_streams(k))
    if added_objects:
        found.append(f"{len(added_objects)} objects left under the warehouse: {added_objects[:10]}")
    if removed_objects:
        found.append(f"{len(removed_objects)} objects gone from the warehouse: {removed_objects[:10]}")
    return found
