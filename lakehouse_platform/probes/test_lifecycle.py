"""Probe 7 — lifecycle safety (storage).

No bucket lifecycle rule with an expiration may cover a warehouse prefix: Iceberg's own maintenance is
the only thing allowed to delete table files. And every file the current snapshots reference — the
metadata file, the manifest list, every manifest, every data and delete file — exists in storage.
"""

from __future__ import annotations

import concurrent.futures
from urllib.parse import urlparse

import pytest
from botocore.exceptions import ClientError

from lakehouse_platform.probes.support.stack import Stack, fail

pytestmark = [pytest.mark.storage, pytest.mark.safe]  # reads the bucket's rules and HEADs files

MAX_TABLES = 200  # bound on the tables walked (the probe's own come first)


def _rule_prefix(rule: dict) -> str | None:
    """The key prefix a rule applies to ('' = the whole bucket); None if it is scoped by tags only."""
    if "Prefix" in rule:
        return rule["Prefix"] or ""
    filt = rule.get("Filter")
    if filt is None:
        return ""
    if "Prefix" in filt:
        return filt["Prefix"] or ""
    if "And" in filt:
        return filt["And"].get("Prefix", "") or ""
    if "Tag" in filt or "ObjectSizeGreaterThan" in filt or "ObjectSizeLessThan" in filt:
        return ""  # a tag/size-scoped rule can still reach any key of the bucket
    return ""


def _overlaps(rule_prefix: str, warehouse_prefix: str) -> bool:
    return warehouse_prefix.startswith(rule_prefix) or rule_prefix.startswith(warehouse_prefix)


def test_no_expiration_rule_covers_a_warehouse_prefix(stack: Stack, figure, say):
    s3 = stack.s3(identity=stack.platform_identity)  # bucket configuration is the platform's to read
    bucket = stack.bucket
    prefixes = stack.warehouse_prefixes
    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", [])
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response["ResponseMetadata"]["HTTPStatusCode"]
        if code == "NoSuchLifecycleConfiguration":
            say(f"== s3://{bucket}: no lifecycle configuration ({status} {code}): nothing can expire table files")
            figure(f"s3://{bucket}: no lifecycle configuration")
            return
        if code in ("NotImplemented", "MethodNotAllowed") or status == 501:
            say(f"== s3://{bucket}: the store does not implement bucket lifecycle ({status} {code})")
            figure(f"s3://{bucket}: lifecycle not implemented by the store ({status})")
            return
        fail(stack, "storage", "cannot read the bucket's lifecycle configuration", {"status": status, "code": code})
    dangerous = []
    for rule in rules:
        if rule.get("Status") != "Enabled" or "Expiration" not in rule:
            continue  # NoncurrentVersionExpiration / AbortIncompleteMultipartUpload never touch current files
        prefix = _rule_prefix(rule)
        covered = [p for p in prefixes if prefix is not None and _overlaps(prefix, p)]
        if covered:
            dangerous.append({"rule": rule.get("ID", "?"), "prefix": prefix, "expiration": rule["Expiration"],
                              "covers warehouse prefixes": covered})
    summary = [(r.get("ID", "?"), r.get("Status"), sorted(k for k in r if k not in ("ID", "Status", "Filter", "Prefix")))
               for r in rules]
    say(f"== s3://{bucket}: {len(rules)} lifecycle rule(s): {summary}; warehouse prefixes {prefixes}")
    figure(f"{len(rules)} rules, {len(dangerous)} expiring a warehouse prefix")
    if dangerous:
        fail(stack, "storage", "a lifecycle rule expires objects under a warehouse prefix (it would delete files "
             "the table metadata still references)", dangerous)


def _tables(catalog, first: list[str]) -> list[str]:
    found = list(dict.fromkeys(first))
    for namespace in catalog.list_namespaces():
        for ident in catalog.list_tables(namespace):
            name = ".".join(ident)
            if name not in found:
                found.append(name)
            if len(found) >= MAX_TABLES:
                return found
    return found


def _referenced(table) -> set[str]:
    """Every file the table's current snapshot references (metadata file included)."""
    paths = {table.metadata_location}
    snapshot = table.current_snapshot()
    if snapshot is None:
        return paths
    paths.add(snapshot.manifest_list)
    for manifest in snapshot.manifests(table.io):
        paths.add(manifest.manifest_path)
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            paths.add(entry.data_file.file_path)
    return paths


def test_every_file_the_current_snapshots_reference_exists(stack: Stack, created_tables, figure, say):
    catalog = stack.catalog()
    s3 = stack.s3()
    idents = _tables(catalog, list(created_tables))
    referenced: dict[str, str] = {}
    unreadable = []
    for ident in idents:
        try:
            table = catalog.load_table(ident)
            for path in _referenced(table):
                referenced.setdefault(path, ident)
        except Exception as exc:  # noqa: BLE001 - a manifest that cannot be read is itself missing
            unreadable.append(f"{ident}: {type(exc).__name__}: {str(exc)[:300]}")

    def head(path: str) -> tuple[str, int | None]:
        parsed = urlparse(path)
        try:
            s3.head_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
            return path, 200
        except ClientError as exc:
            return path, exc.response["ResponseMetadata"]["HTTPStatusCode"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(head, sorted(referenced)))
    missing = [(path, code, referenced[path]) for path, code in answers if code != 200]
    kinds = {"metadata": sum(p.endswith(".metadata.json") for p in referenced),
             "manifest lists": sum("/snap-" in p for p in referenced),
             "manifests": sum(p.endswith(".avro") and "/snap-" not in p for p in referenced),
             "data/delete files": sum(p.endswith((".parquet", ".orc", ".puffin")) for p in referenced)}
    say(f"== {len(idents)} tables, {len(referenced)} referenced files HEADed ({kinds}): {len(missing)} missing")
    figure(f"{len(idents)} tables, {len(referenced)} files referenced, {len(missing)} missing")
    if unreadable:
        fail(stack, "storage", "table metadata referenced by the catalog cannot be read", unreadable[:10])
    if missing:
        fail(stack, "storage", f"{len(missing)} file(s) the current snapshots reference are missing from storage",
             [{"path": p, "status": c, "table": t} for p, c, t in missing[:20]])
