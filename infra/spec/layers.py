"""The seven layers of the platform and their default contracts.

The defaults are the bookshop's ownership table; every stack may override any field of any layer.
"""

from __future__ import annotations

from enum import Enum

from infra.labels import LAYER_NAMES


class Layer(str, Enum):
    """A layer of the platform. Order matters: it is the order of the ownership table."""

    STORAGE = "storage"
    CATALOG = "catalog"
    COMPUTE = "compute"
    GOVERNANCE = "governance"
    ORCHESTRATION = "orchestration"
    OBSERVABILITY = "observability"
    RECOVERY = "recovery"


if tuple(layer.value for layer in Layer) != LAYER_NAMES:  # the one list of layers is infra.labels.LAYER_NAMES
    raise RuntimeError(f"infra.spec.Layer and infra.labels.LAYER_NAMES disagree: {[m.value for m in Layer]} != {LAYER_NAMES}")

# Each entry: what the layer owns, who owns it, how it changes, what it promises, and what its
# failure means for everyone else. Kept as data so review, outputs, labels and policies share it.
DEFAULT_CONTRACTS: dict[str, dict[str, str]] = {
    "storage": {
        "owns": "the bytes: data files, manifests, metadata files",
        "owner": "platform",
        "change_control": "bucket policy and lifecycle rules reviewed; no lifecycle rule touches a warehouse prefix",
        "promise": "durability; no deletion outside Iceberg's own maintenance",
        "down_means": "nothing works, including reads of tables nobody is writing",
    },
    "catalog": {
        "owns": "name -> current metadata pointer, and its atomic swap",
        "owner": "platform",
        "change_control": "schema migrations of the catalog database are the platform's release, not the engine teams'",
        "promise": "name resolution and atomic commit, with a stated availability",
        "down_means": "no engine can find or commit to any table, even though every byte is intact",
    },
    "compute": {
        "owns": "the engines that plan scans, write files and commit",
        "owner": "each engine's team",
        "change_control": "engine upgrades certified against the platform's tables before rollout",
        "promise": "their users' queries",
        "down_means": "that engine's users are down; every other engine is fine",
    },
    "governance": {
        "owns": "who may read and write what, and how credentials reach the engines",
        "owner": "security, executed by platform",
        "change_control": "policy changes reviewed by both",
        "promise": "the same answer through every engine",
        "down_means": "reads fail closed or, worse, fail open",
    },
    "orchestration": {
        "owns": "when writes and maintenance run, and in what order",
        "owner": "data engineering",
        "change_control": "maintenance is scheduled by the platform, pipelines by their owners",
        "promise": "freshness per table",
        "down_means": "tables go stale, maintenance stops, and nobody notices until the bill or the planning time says so",
    },
    "observability": {
        "owns": "the metadata tables, turned into signals someone watches",
        "owner": "platform",
        "change_control": "signals derived from metadata tables, not from engine logs",
        "promise": "incidents found before users find them",
        "down_means": "incidents are discovered by users instead of by you",
    },
    "recovery": {
        "owns": "catalog backups, metadata-consistent replicas, the practised way back",
        "owner": "platform",
        "change_control": "restores are practised, not documented",
        "promise": "a stated recovery point and time",
        "down_means": "the first real loss is permanent",
    },
}
