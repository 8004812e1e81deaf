"""Storage: the bytes survive. No lifecycle rule deletes table files; buckets are protected; the lab's
object store keeps its data on a volume."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lakehouse_platform.policies.adapters import docker
from lakehouse_platform.policies.resources import (
    DOCKER_CONTAINER,
    PolicyDef,
    Resource,
    StackContext,
    fmt_days,
    index_of,
    message,
    service_label,
    snake,
)
from lakehouse_platform.policies.wire import is_unknown, number, reveal, truthy

S3_BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
S3_VERSIONING = ("aws:s3/bucketVersioning:BucketVersioning", "aws:s3/bucketVersioningV2:BucketVersioningV2")
S3_ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
S3_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
S3_ACCOUNT_PUBLIC_ACCESS_BLOCK = "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock"
S3_LIFECYCLE = (
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2",
)
PUBLIC_ACCESS_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
KMS_ALGORITHMS = ("aws:kms", "aws:kms:dsse")


# ---- lifecycle ------------------------------------------------------------------------------


def _rule_prefix(rule: Mapping[str, Any]) -> str | None:
    """The prefix a lifecycle rule is scoped to ('' for the whole bucket; None when unknown)."""
    candidates = []
    flt = reveal(rule.get("filter"))
    if isinstance(flt, Mapping):
        candidates.append(flt.get("prefix"))
        conj = flt.get("and")
        if isinstance(conj, Mapping):
            candidates.append(conj.get("prefix"))
    candidates.append(rule.get("prefix"))
    for value in candidates:
        if is_unknown(value):
            return None
        if isinstance(value, str) and value:
            return value.lstrip("/")
    return ""


def _expires_current(rule: Mapping[str, Any]) -> str | None:
    """How a rule expires current objects ('after N days', 'on <date>'), or None if it does not."""
    expiration = reveal(rule.get("expiration"))
    if isinstance(expiration, list):  # older schemas: a one-element list
        expiration = expiration[0] if expiration else None
    if not isinstance(expiration, Mapping):
        return None
    days, date = number(expiration.get("days")), expiration.get("date")
    if days:
        return f"after {fmt_days(days)} days"
    if isinstance(date, str) and date and not is_unknown(date):
        return f"on {date}"
    return None


def _describe_prefix(prefix: str) -> str:
    return f"'{prefix}'" + (" (the whole bucket)" if prefix == "" else "")


def check_lifecycle_keeps_warehouse(resource: Resource, context: StackContext | None) -> list[str]:
    """No lifecycle rule expires current objects under a warehouse prefix (aws).

    Only Iceberg's own maintenance (expire_snapshots, remove_orphan_files) may delete table files:
    a lifecycle rule that expires current objects deletes files the current snapshot still
    references. Expiring noncurrent versions and aborting multipart uploads is fine. Applies to
    every lifecycle configuration of the stack: its buckets are the warehouse and its replica.
    """
    rule_name = "storage-lifecycle-keeps-warehouse"
    if resource.type in S3_LIFECYCLE:
        rules = reveal(resource.props.get("rules"))
    elif resource.type in S3_BUCKETS:
        rules = reveal(resource.props.get("lifecycleRules"))
    else:
        return []
    if not isinstance(rules, list):
        return []
    prefixes = context.warehouse_prefixes if context is not None else ("",)
    out: list[str] = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            continue
        status = rule.get("status", "Enabled" if rule.get("enabled", True) is not False else "Disabled")
        if status == "Disabled":
            continue
        how = _expires_current(rule)
        prefix = _rule_prefix(rule)
        if how is None or prefix is None:
            continue
        clash = next((w.lstrip("/") for w in prefixes
                      if prefix.startswith(w.lstrip("/")) or w.lstrip("/").startswith(prefix)), None)
        if clash is None:
            continue
        rule_id = rule.get("id") or f"#{i}"
        out.append(message(resource, rule_name,
                           f"lifecycle rule '{rule_id}' expires current objects {how} under prefix "
                           f"{_describe_prefix(prefix)}, which overlaps warehouse prefix {_describe_prefix(clash)}; "
                           "only Iceberg's maintenance may delete table files: scope the rule outside the "
                           "warehouse prefixes or expire noncurrent versions only", context))
    return out


# ---- bucket protection ----------------------------------------------------------------------


def _refs_of(resource: Resource) -> set[str]:
    refs = {resource.name}
    for value in (resource.props.get("bucket"), resource.props.get("id"), resource.id):
        value = reveal(value)
        if isinstance(value, str) and value and not is_unknown(value):
            refs.add(value)
    return refs


def _attached(sub: Resource, buckets: Sequence[Resource]) -> list[Resource]:
    """The buckets an S3 sub-resource (versioning, encryption, public access block) configures."""
    if sub.deps.get("bucket"):
        linked = [b for b in buckets if b.urn in sub.deps["bucket"]]
        if linked:
            return linked
    target = reveal(sub.props.get("bucket"))
    if isinstance(target, str) and not is_unknown(target):
        return [b for b in buckets if target in _refs_of(b)]
    same_parent = [b for b in buckets if b.parent == sub.parent]
    return same_parent if len(same_parent) == 1 else []


def _flags_off(resource: Resource) -> list[str]:
    return [f for f in PUBLIC_ACCESS_FLAGS if truthy(resource.props.get(f)) is False or resource.props.get(f) is None]


def check_bucket_protected(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """Every bucket is versioned, encrypted with SSE-KMS and blocked from public access (aws)."""
    rule = "storage-bucket-protected"
    buckets = [r for r in resources if r.type in S3_BUCKETS]
    if not buckets:
        return []
    index = index_of(resources)
    versioned: dict[str, bool | None] = {}
    encrypted: dict[str, Any] = {}
    blocked: dict[str, list[str]] = {}
    account_block = None
    for r in resources:
        if r.type == S3_ACCOUNT_PUBLIC_ACCESS_BLOCK:
            account_block = _flags_off(r)
    for sub in resources:
        if sub.type in S3_VERSIONING:
            cfg = reveal(sub.props.get("versioningConfiguration")) or {}
            status = cfg.get("status") if isinstance(cfg, Mapping) else None
            for b in _attached(sub, buckets):
                versioned[b.urn or b.name] = None if is_unknown(status) else status == "Enabled"
        elif sub.type in S3_ENCRYPTION:
            algorithms = []
            for rule_cfg in reveal(sub.props.get("rules")) or []:
                default = rule_cfg.get("applyServerSideEncryptionByDefault") if isinstance(rule_cfg, Mapping) else None
                if isinstance(default, Mapping):
                    algorithms.append(default.get("sseAlgorithm"))
            algorithm = next((a for a in algorithms if a in KMS_ALGORITHMS or is_unknown(a)),
                             algorithms[0] if algorithms else None)
            for b in _attached(sub, buckets):
                encrypted[b.urn or b.name] = "unknown" if is_unknown(algorithm) else algorithm
        elif sub.type == S3_PUBLIC_ACCESS_BLOCK:
            flags = _flags_off(sub)
            for b in _attached(sub, buckets):
                blocked[b.urn or b.name] = flags
    out: list[str] = []
    for b in buckets:
        key = b.urn or b.name
        problems = []
        inline_versioning = reveal(b.props.get("versioning"))
        inline_on = isinstance(inline_versioning, Mapping) and truthy(inline_versioning.get("enabled")) is True
        if versioned.get(key) is False or (key not in versioned and not inline_on):
            problems.append("is not versioned (no BucketVersioning with status Enabled): an overwritten or deleted "
                            "metadata file could not be recovered")
        algorithm = encrypted.get(key)
        if key not in encrypted:
            inline = reveal(b.props.get("serverSideEncryptionConfiguration"))
            try:
                algorithm = inline["rule"]["applyServerSideEncryptionByDefault"]["sseAlgorithm"]
            except (TypeError, KeyError):
                algorithm = None
        if algorithm is None:
            problems.append("is not encrypted with SSE-KMS (no server-side encryption configuration)")
        elif algorithm not in KMS_ALGORITHMS and algorithm != "unknown" and not is_unknown(algorithm):
            problems.append(f"is not encrypted with SSE-KMS (sse_algorithm is {algorithm!r}; use 'aws:kms')")
        off: list[str] | None = blocked.get(key)
        if off is None and account_block is not None:
            off = account_block
        if off is None:
            problems.append("has no public access block (all four of block_public_acls, block_public_policy, "
                            "ignore_public_acls, restrict_public_buckets must be true)")
        elif off:
            problems.append(f"is not blocked from public access ({', '.join(snake(f) for f in off)} not true)")
        acl = reveal(b.props.get("acl"))
        if isinstance(acl, str) and acl.startswith("public"):
            problems.append(f"has a public ACL ({acl})")
        for p in problems:
            out.append(message(b, rule, f"bucket {p}", context, index))
    return out


# ---- the lab's object store -----------------------------------------------------------------


def _stores() -> tuple[str, ...]:
    """The services that are the platform's object store (the registry's providers of ``STORE``)."""
    from lakehouse_platform.services.capabilities import STORE
    from lakehouse_platform.services.registry import registry

    return registry().providers(STORE)


def _is_store(resource: Resource) -> bool:
    if service_label(resource) in _stores():
        return True
    command = reveal(resource.props.get("command")) or []
    return bool(command) and command[0] == "server" and any(str(a).startswith("-dir=") for a in command)


def check_store_persistent(resource: Resource, context: StackContext | None) -> list[str]:
    """The lab's object store keeps its data on a named volume or bind mount (docker)."""
    if resource.type != DOCKER_CONTAINER or docker.is_job(resource) or not _is_store(resource):
        return []
    command = reveal(resource.props.get("command")) or []
    if is_unknown(command):
        return []
    data_dir = next((str(a).split("=", 1)[1] for a in command if str(a).startswith("-dir=")), "/data")
    mount = docker.covering_mount(resource, data_dir)
    if mount and mount[0] in ("volume", "bind") and mount[1]:
        return []
    return [message(resource, "storage-persistent-volume",
                    f"the object store's data directory {data_dir} is not on a named volume or bind mount: "
                    "every byte of every table would live in the container's writable layer and be lost with it; "
                    f"mount a named volume at {data_dir}", context)]


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("storage-lifecycle-keeps-warehouse", "No lifecycle rule expires current objects under a warehouse "
              "prefix; only Iceberg's maintenance deletes table files.", "resource", check_lifecycle_keeps_warehouse,
              needs_context=True),
    PolicyDef("storage-bucket-protected", "Every bucket is versioned, encrypted with SSE-KMS and blocked from "
              "public access.", "stack", check_bucket_protected),
    PolicyDef("storage-persistent-volume", "The object store keeps its data on a named volume or bind mount.",
              "resource", check_store_persistent),
)
