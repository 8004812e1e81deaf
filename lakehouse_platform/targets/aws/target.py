"""The aws target: the same seven layers on an AWS account, with pulumi-aws. It assembles, it owns no service.

The building blocks are the kit's (``lakehouse_platform.components.aws``); each service's own counterpart (RDS, the
catalog servers, Trino on ECS, EMR Serverless, MSK and MSK Connect, the MSF application, EventBridge maintenance,
Amazon Managed Prometheus, the exporter) is the ``aws`` module of its package, declared as an ``AwsPart``.
``AwsTarget.build`` makes the shared pieces, then builds the parts in dependency order, handing each the typed
``Foundation`` (``lakehouse_platform.services.aws_parts``):

    governance (network, KMS, roles, secrets) -> log groups (every part's sources) -> storage (warehouse)
    -> the clusters, the code bucket, the catalogs' load balancer, the alarm topic (what the parts stand on)
    -> the images the stack pushes (the operations image, when a part runs it)
    -> catalog parts -> their jobs, run in order by ``pulumi up`` (``catalog_jobs.bootstrap``) -> compute parts
    -> orchestration (declared tables, maintenance parts) -> observability parts, then every part's alarms
    -> recovery (backups of the catalog database, the warehouse's replica)

The log groups come right after governance because every writer (ECS tasks, RDS, EMR, MSK) must find its
KMS-encrypted group already there; their names derive from the spec, so nothing waits for a later layer.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_aws as aws

from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.components.aws import alarms, ecs, logs, storage
from lakehouse_platform.components.aws.common import tag_value
from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.layers import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.placeholders import KMS_KEY_ARN, VENDING_ROLE_ARN
from lakehouse_platform.services.aws_catalogs import CatalogPorts, catalog_servers
from lakehouse_platform.services.aws_parts import CatalogLoadBalancer, Foundation
from lakehouse_platform.services.capabilities import DATABASE, DatabaseOnAws
from lakehouse_platform.services.context import Side, url
from lakehouse_platform.services.definition import AwsPart
from lakehouse_platform.services.operations_support import OPERATIONS_IMAGE
from lakehouse_platform.services.registry import registry
from lakehouse_platform.targets import Built
from lakehouse_platform.targets.aws import catalog_jobs, governance, images, recovery
from lakehouse_platform.targets.aws.network import platform_network
from lakehouse_platform.targets.aws.provider_config import provider_args

#: The layers whose services' parts the target builds, in order.
PART_LAYERS = (Layer.CATALOG, Layer.COMPUTE, Layer.ORCHESTRATION, Layer.OBSERVABILITY)
#: The layers that always have an ECS cluster: what CD runs (catalog jobs) and the engines.
CLUSTER_LAYERS = (Layer.CATALOG, Layer.COMPUTE)


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
        ctx = AwsContext(spec, self.secrets, provider, layers, artifacts=self.artifacts,
                         built_images=frozenset({OPERATIONS_IMAGE}))
        parts = registry().aws_parts(spec)
        gov = governance.build(ctx, platform_network(ctx))
        # What the catalogs' setup jobs name in their storage configuration.
        ctx.platform_values.update({VENDING_ROLE_ARN: gov.vending_role.arn, KMS_KEY_ARN: gov.key.arn})
        groups = logs.build(ctx, gov.key.arn, log_sources(spec, parts))
        warehouse = storage.warehouse(ctx, gov.key.arn)
        foundation = self._foundation(ctx, gov, groups, warehouse, parts)
        # The images the stack pushes itself (the operations image), before any task definition names them.
        pushed = images.build(ctx, gov, parts)
        built = Built()
        for layer in PART_LAYERS:
            for part in (p for p in parts if p.layer is layer):
                component = part.build(foundation)
                foundation.parts[part.name] = component
                foundation.secret_refs.update(component.secret_refs)
                built.layer(layer).update(component.layer_outputs())
                built.outputs.update(component.stack_outputs())
            if layer is Layer.CATALOG:
                # The catalog set up by `pulumi up` itself, before any part of a later layer needs it.
                foundation.catalog_ready = catalog_jobs.bootstrap(foundation, list(foundation.parts.values()))
        topic = foundation.alarms
        topic.watch([foundation.catalogs, *foundation.parts.values()])
        database: DatabaseOnAws | None = foundation.provider(DATABASE)
        rec = recovery.build(ctx, gov, warehouse, database.database if database else None)

        self._catalog_outputs(foundation, built)
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

    def _foundation(self, ctx: AwsContext, gov: governance.GovernanceState, groups: logs.LogGroups,
                    warehouse: storage.SecureBucket, parts: tuple[AwsPart, ...]) -> Foundation:
        """What every part stands on, made before any part: the clusters, the code bucket when a part uploads code,
        the catalogs' load balancer when a catalog runs as an ECS service, the alarm topic."""
        spec = ctx.spec
        cluster_layers = [*CLUSTER_LAYERS, *(p.layer for p in parts if p.cluster and p.layer not in CLUSTER_LAYERS)]
        code = (storage.secure_bucket(ctx, Layer.COMPUTE, f"{spec.name}-artifacts",
                                      storage.code_bucket_name(spec.storage.bucket), gov.key.arn)
                if any(p.uploads_code for p in parts) else None)
        catalogs = (CatalogLoadBalancer(ctx, gov.network, CatalogPorts.of(spec).catalog)
                    if catalog_servers(spec) else None)
        topic = alarms.Alarms(ctx, gov.key.arn)
        return Foundation(
            ctx, gov, groups, warehouse, clusters={layer: ecs.cluster(ctx, layer) for layer in cluster_layers},
            alarms=topic, providers=registry().providers, secret_refs=dict(gov.secret_refs), code=code,
            catalogs=catalogs)

    def _catalog_outputs(self, foundation: Foundation, built: Built) -> None:
        """The catalog layer: its cluster, where each catalog is, the jobs CD runs, the load balancer."""
        spec = foundation.spec
        cluster = foundation.cluster(Layer.CATALOG)
        urls = {}
        for name in catalog_servers(spec):
            role = registry()[name].catalog
            assert role is not None
            urls[name] = url(spec, name, "http", Side.INTERNAL, role.path)
        jobs = catalog_jobs.run_spec(foundation, list(foundation.parts.values()))
        built.layer(Layer.CATALOG).update({"cluster": cluster.name, "catalog_urls": urls, "jobs": jobs})
        built.outputs.update({"catalog_urls": urls, "catalog_jobs": jobs, "catalog_cluster": cluster.name})
        if foundation.catalogs is not None:
            built.layer(Layer.CATALOG)["load_balancer"] = foundation.catalogs.balancer.dns_name
            built.outputs["catalog_load_balancer"] = foundation.catalogs.balancer.dns_name

