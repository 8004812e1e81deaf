"""Pydantic models of the platform: the typed boundary between a stack's config and the program.

Everything a stack may set is declared here, one module per concern, with a description and a
validator. Components never see raw config: they receive plain typed values taken from a
validated ``PlatformSpec``. Loading a stack's config is ``lakehouse_platform.config``.
"""

from lakehouse_platform.labels import LAYER_NAMES
from lakehouse_platform.model.aws import AwsSpec
from lakehouse_platform.model.base import SIZE_HELP, Strict, Target, parse_size
from lakehouse_platform.model.catalog import CatalogSpec, EngineSpec
from lakehouse_platform.model.flink import FlinkJobSpec, FlinkSpec
from lakehouse_platform.model.governance import Action, GovernanceSpec, IdentitySpec, Role, role_of
from lakehouse_platform.model.lab import LabSpec
from lakehouse_platform.model.layers import DEFAULT_CONTRACTS, OWNER_APPROVER, Layer, LayerSpec
from lakehouse_platform.model.operations import (
    MaintenanceJob,
    ObservabilitySpec,
    RecoverySpec,
    cron_problem,
    eventbridge_cron,
)
from lakehouse_platform.model.platform import PlacementContext, PlatformSpec
from lakehouse_platform.model.review import ReviewSpec
from lakehouse_platform.model.service import HealthCheckSpec, LogSpec, PortSpec, RestartSpec, ServiceSpec
from lakehouse_platform.model.storage import StorageSpec, bucket_name_problem
from lakehouse_platform.model.streams import DebeziumPostgresSpec, IcebergSinkSpec, StreamsSpec, TopicSpec
from lakehouse_platform.model.tables import ColumnSpec, PartitionFieldSpec, TableSpec

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
    "LogSpec",
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
