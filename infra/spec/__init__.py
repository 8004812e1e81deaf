"""Pydantic models of the platform: the typed boundary between a stack's config and the program.

Everything a stack may set is declared here, one module per concern, with a description and a
validator. Components never see raw config: they receive plain typed values taken from a
validated ``PlatformSpec``. Loading a stack's config is ``infra.config``.
"""

from infra.labels import LAYER_NAMES
from infra.spec.aws import AwsSpec
from infra.spec.base import SIZE_HELP, Strict, Target, parse_size
from infra.spec.catalog import CatalogSpec, EngineSpec
from infra.spec.flink import FlinkJobSpec, FlinkSpec
from infra.spec.governance import Action, GovernanceSpec, IdentitySpec, Role, role_of
from infra.spec.lab import LabSpec
from infra.spec.layers import DEFAULT_CONTRACTS, OWNER_APPROVER, Layer, LayerSpec
from infra.spec.operations import MaintenanceJob, ObservabilitySpec, RecoverySpec, cron_problem, eventbridge_cron
from infra.spec.platform import PlacementContext, PlatformSpec
from infra.spec.review import ReviewSpec
from infra.spec.service import HealthCheckSpec, PortSpec, RestartSpec, ServiceSpec
from infra.spec.storage import StorageSpec, bucket_name_problem
from infra.spec.streams import DebeziumPostgresSpec, IcebergSinkSpec, StreamsSpec, TopicSpec
from infra.spec.tables import ColumnSpec, PartitionFieldSpec, TableSpec

__all__ = [
    "DEFAULT_CONTRACTS",
    "LAYER_NAMES",
    "OWNER_APPROVER",
    "SIZE_HELP",
    "Action",
    "AwsSpec",
    "CatalogSpec",
    "ColumnSpec",
    "DebeziumPostgresSpec",
    "EngineSpec",
    "FlinkJobSpec",
    "FlinkSpec",
    "GovernanceSpec",
    "HealthCheckSpec",
    "IcebergSinkSpec",
    "IdentitySpec",
    "LabSpec",
    "Layer",
    "LayerSpec",
    "MaintenanceJob",
    "ObservabilitySpec",
    "PartitionFieldSpec",
    "PlacementContext",
    "PlatformSpec",
    "PortSpec",
    "RecoverySpec",
    "RestartSpec",
    "ReviewSpec",
    "Role",
    "ServiceSpec",
    "StorageSpec",
    "StreamsSpec",
    "Strict",
    "TableSpec",
    "Target",
    "TopicSpec",
    "bucket_name_problem",
    "cron_problem",
    "eventbridge_cron",
    "parse_size",
    "role_of",
]
