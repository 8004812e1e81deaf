"""The seven layers of the platform, their contract model and their default contracts.

The defaults are the bookshop's ownership table; every stack may override any field of any layer.
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field, field_validator
from pydantic.config import JsonDict

from lakehouse_platform.labels import LAYER_NAMES
from lakehouse_platform.model.base import Strict


class Layer(str, Enum):
    """A layer of the platform. Order matters: it is the order of the ownership table."""

    STORAGE = "storage"
    CATALOG = "catalog"
    COMPUTE = "compute"
    GOVERNANCE = "governance"
    ORCHESTRATION = "orchestration"
    OBSERVABILITY = "observability"
    RECOVERY = "recovery"


assert tuple(layer.value for layer in Layer) == LAYER_NAMES  # one list of layers, shared with the policy pack

# Which layer a config key belongs to is read from the models (the change review:
# lakehouse_platform/review/change/keys.py):
# a section's model says it as a class attribute, ``LAYER: ClassVar[Layer] = Layer.STORAGE``; a field of a
# section that serves several layers (``aws``) says it with ``json_schema_extra=of_layer(Layer.COMPUTE)``; a
# service's keys belong to its ``layer``, a layer's contract to that layer. A key none of these places
# (``target``, ``name``, ``aws.region``, ``lab``) belongs to every layer.


def of_layer(layer: Layer, on_change: str | None = None) -> JsonDict:
    """A field's ``json_schema_extra``: the layer its key belongs to, and what changing it does (for the review)."""
    extra: JsonDict = {"layer": layer.value}
    if on_change:
        extra["on_change"] = on_change
    return extra


#: In a layer's ``approvers``: the owner of what changes (a service's own owner, a declared table's owner, else the
#: layer's owner), so one rule serves every engine team.
OWNER_APPROVER = "owner"


class LayerSpec(Strict):
    """A layer's contract: who owns it, how it changes (and who approves a change), what it promises, what its loss
    means."""

    owns: str = Field(description="What the layer owns.")
    owner: str = Field(description="The team that answers for the layer.")
    change_control: str = Field(description="How changes to the layer are reviewed and released.")
    approvers: list[str] = Field(
        default_factory=lambda: [OWNER_APPROVER], min_length=1,
        description=f"Who must approve a change to the layer's keys or resources, every one of them (python -m "
                    f"lakehouse_platform.review --base ...): team names, and '{OWNER_APPROVER}' for the owner of what "
                    "changes (a "
                    "service's or a declared table's owner, else the layer's). The base's rules apply to a change: "
                    "a pull request can add approvers, never remove one.")
    promise: str = Field(description="What the owner promises everyone else.")
    down_means: str = Field(description="What the layer being down means for everyone else.")

    @field_validator("owner")
    @classmethod
    def _owner_named(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("every layer needs an owner: name the team that answers for it")
        return value.strip()

    @field_validator("approvers")
    @classmethod
    def _approvers(cls, value: list[str]) -> list[str]:
        return approver_list(value, f"'{OWNER_APPROVER}', the owner of what changes")


def approver_list(value: list[str], stands_for: str) -> list[str]:
    """A list of approvers as a rule names them: each a team (or ``stands_for``), stripped, none empty or twice."""
    names = [name.strip() for name in value]
    if any(not name for name in names):
        raise ValueError(f"an approver is empty; name a team (or {stands_for})")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} listed twice; list each approver once")
    return names


# Each entry: what the layer owns, who owns it, how it changes (approvers: who approves a change, where the
# change control names more than its owner), what it promises, and what its failure means for everyone else.
# Kept as data so review, outputs, labels and policies share it.
DEFAULT_CONTRACTS: dict[str, dict[str, str | list[str]]] = {
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
        "approvers": ["security", "platform"],  # both: the owner is security, executed by platform
        "promise": "the same answer through every engine",
        "down_means": "reads fail closed or, worse, fail open",
    },
    "orchestration": {
        "owns": "when writes and maintenance run, and in what order",
        "owner": "data engineering",
        "change_control": "maintenance is scheduled by the platform, pipelines by their owners",
        "approvers": [OWNER_APPROVER, "platform"],  # the table's (or the layer's) owner, and the platform's schedule
        "promise": "freshness per table",
        "down_means": "tables go stale, maintenance stops, and nobody notices until the bill or the planning "
                      "time says so",
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
