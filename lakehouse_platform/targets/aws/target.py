"""The aws target: the same seven layers on an AWS account, with pulumi-aws.

This package holds only what every service shares on aws; each service's own counterpart (RDS, the catalog
servers, Trino on ECS, EMR Serverless, MSK and MSK Connect, the MSF application, EventBridge maintenance,
Amazon Managed Prometheus, the exporter) is the ``aws`` module of its package, declared as an ``AwsPart``.
``AwsTarget.build`` builds in dependency order and hands each part the typed ``Foundation``:

    governance (network, KMS, roles, secrets) -> log groups (every part's sources) -> storage (warehouse)
    -> the images the stack pushes (the operations image, when a part runs it)
    -> catalog parts (behind one load balancer) -> their jobs, run in order (``catalogs.bootstrap``) -> compute parts
    -> orchestration (declared tables, maintenance parts) -> observability (the alarm topic, its parts,
    then every part's alarms) -> recovery (backups of the catalog database, the warehouse's replica)

The log groups come right after governance because every writer (ECS tasks, RDS, EMR, MSK) must find its
KMS-encrypted group already there; their names derive from the spec, so nothing waits for a later layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.layers import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services import registry
from lakehouse_platform.services.capabilities import DATABASE, DatabaseOnAws
from lakehouse_platform.services.context import Side, url
from lakehouse_platform.services.definition import AwsPart
from lakehouse_platform.targets import Built
from lakehouse_platform.targets.aws import alarms, catalogs, governance, images, logs, recovery, storage
from lakehouse_platform.targets.aws.common import tag_value
from lakehouse_platform.targets.aws.context import AwsComponent, AwsContext
from lakehouse_platform.targets.aws.foundation import Foundation
from lakehouse_platform.targets.aws.provider_config import provider_args

#: The layers whose services' parts the target builds, in order.
PART_LAYERS = (Layer.CATALOG, Layer.COMPUTE, Layer.ORCHESTRATION, Layer.OBSERVABILITY)


def log_sources(spec: PlatformSpec, parts: tuple[AwsPart, ...]) -> dict[str, str | None]:
    """Every log group the stack writes to: each part's."""
    sources: dict[str, str | None] = {}
    for part in parts:
        for source, name in (part.log_sources(spec) if part.log_sources else {}).items():
            sources.setdefault(source, name)
    return sources


class AwsTarget:
    """Builds the platform on AWS: S3, RDS PostgreSQL, ECS Fargate, IAM, KMS, CloudWatch, AWS Backup, and the
    managed services the stack enables (EMR Serverless, MSK, MSK Connect, MSF, Amazon Managed Prometheus)."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]],
                 artifacts: StackArtifacts | None = None):
        self.spec = spec
        self.secrets = secrets
        self.artifacts = artifacts or StackArtifacts()  # what it uploads (MSK Connect's plugins), looked up
        # Every aws: key of the stack (profile, assumeRoles, endpoints, ...), for the explicit provider; read
        # here, before any resource, so a key the provider would not take stops the run with nothing registered.
        self.provider_args = provider_args(spec.aws.region, {"lakehouse.platform": tag_value(spec.name),
                                                             "lakehouse.stack": tag_value(pulumi.get_stack())})

    def build(self, layers: Mapping[Layer, LayerComponent]) -> Built:
        spec = self.spec
        provider = aws.Provider(f"{spec.name}-aws", **self.provider_args,
                                opts=pulumi.ResourceOptions(parent=layers[Layer.GOVERNANCE]))
        ctx = AwsContext(spec, self.secrets, provider, layers, artifacts=self.artifacts)
        parts = registry().aws_parts(spec)
        gov = governance.build(ctx)
        groups = logs.build(ctx, gov.key.arn, log_sources(spec, parts))
        warehouse = storage.warehouse(ctx, gov.key.arn)
        foundation = Foundation(ctx, gov, groups, warehouse, secret_refs=dict(gov.secret_refs))
        # The images the stack pushes itself (the operations image), before any task definition names them.
        pushed = images.build(ctx, gov, parts)
        for layer in (Layer.CATALOG, Layer.COMPUTE):
            foundation.cluster(layer)  # every stack has both: what CD runs (catalog jobs) and the engines
        built = Built()
        watchers: list[Any] = []
        front = catalogs.CatalogLoadBalancer(foundation) if catalogs.servers(foundation) else None
        watchers += [front] if front else []
        topic: alarms.Alarms | None = None
        for layer in PART_LAYERS:
            if layer is Layer.OBSERVABILITY:
                topic = alarms.Alarms(ctx, gov.key.arn)
                foundation.alarm_topic = topic.topic
            for part in (p for p in parts if p.layer is layer):
                component: AwsComponent = part.build(foundation)
                foundation.parts[part.name] = component
                built.layer(layer).update(component.layer_outputs())
                built.outputs.update(component.stack_outputs())
            if layer is Layer.CATALOG:
                # The catalog set up by `pulumi up` itself, before any part of a later layer needs it.
                catalogs.bootstrap(foundation, self._first_jobs(foundation))
        assert topic is not None
        topic.watch([*watchers, *foundation.parts.values()])
        database: DatabaseOnAws | None = foundation.provider(DATABASE)
        rec = recovery.build(ctx, gov, warehouse, database.database if database else None)

        self._catalog_outputs(foundation, front, built)
        cluster = foundation.cluster(Layer.COMPUTE)
        built.layer(Layer.COMPUTE)["cluster"] = cluster.name
        built.outputs["compute_cluster"] = cluster.name
        orchestration = built.layer(Layer.ORCHESTRATION)
        orchestration.setdefault("schedules", [])
        built.layer(Layer.OBSERVABILITY).update(topic.layer_outputs())
        if pushed is not None:
            built.layer(Layer.OBSERVABILITY).update(pushed.layer_outputs())
            built.outputs.update(pushed.stack_outputs())
        built.outputs.update(topic.stack_outputs())
        storage_layer, storage_stack = storage.storage_outputs(warehouse, list(spec.storage.warehouse_prefixes))
        for layer, (layer_out, stack_out) in ((Layer.GOVERNANCE, (gov.layer_outputs(), gov.stack_outputs())),
                                              (Layer.STORAGE, (storage_layer, storage_stack)),
                                              (Layer.RECOVERY, (rec.layer_outputs(), rec.stack_outputs()))):
            built.layer(layer).update(layer_out)
            built.outputs.update(stack_out)
        # One Output per key: nested Outputs (lists of subnet ids, per-job specs) resolve as a whole.
        built.outputs = {k: pulumi.Output.from_input(v) for k, v in built.outputs.items()}
        built.layer(Layer.OBSERVABILITY)["log_groups"] = groups.names
        return built

    @staticmethod
    def _first_jobs(foundation: Foundation) -> list[str]:
        """The jobs a part says come first (the database's init), before the catalogs' own in start order."""
        return [job for part in foundation.parts.values() for job in part.first_jobs]

    def _catalog_outputs(self, foundation: Foundation, front: catalogs.CatalogLoadBalancer | None,
                         built: Built) -> None:
        """The catalog layer: its cluster, where each catalog is, the jobs CD runs, the load balancer."""
        spec = foundation.spec
        cluster = foundation.cluster(Layer.CATALOG)
        urls = {}
        for name in catalogs.servers(foundation):
            role = registry()[name].catalog
            assert role is not None
            urls[name] = url(spec, name, "http", Side.INTERNAL, role.path)
        jobs = catalogs.run_spec(foundation, self._first_jobs(foundation))
        built.layer(Layer.CATALOG).update({"cluster": cluster.name, "catalog_urls": urls, "jobs": jobs})
        built.outputs.update({"catalog_urls": urls, "catalog_jobs": jobs, "catalog_cluster": cluster.name})
        if front is not None:
            built.layer(Layer.CATALOG)["load_balancer"] = front.balancer.dns_name
            built.outputs["catalog_load_balancer"] = front.balancer.dns_name
