"""Lakekeeper: production catalog two, in Rust, on PostgreSQL (catalog layer).

Lakekeeper vends the store's host-side address (localhost:8333) to host clients, and must reach
the store at that same address itself; on docker the loopback sidecar shares its network namespace
and forwards localhost:8333 to the store's internal address.

Whole definition: defaults, the container, its jobs (migrate: the schema; warehouse: bootstrap and
the warehouse, over the management API) and loopback sidecar, the ECS task and jobs, and its role
as a catalog. Not on native: no registry serves Lakekeeper's server.

Refused on every target for now (``REFUSED``, ADR 0013): the definition stays whole (its plans are tested
as they would run) so that enabling it again is the ADR's work, not a rewrite.

Read against Lakekeeper v0.13.3: a fresh server must be bootstrapped once (POST
/management/v1/bootstrap; again: 400 CatalogAlreadyBootstrapped, api/management/v1/server.rs)
and serves no table before a warehouse exists (POST /management/v1/warehouse; again: 409
WarehouseAlreadyExists). Creating a warehouse test-writes to its storage, so on the lab the bucket
and the loopback sidecar come first. The image is distroless (no shell, no curl): the warehouse
job runs in its own curl image, as upstream's examples/minimal does.
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services import steps
from lakehouse_platform.services.capabilities import WAREHOUSE_BUCKET
from lakehouse_platform.services.definition import (
           AwsPart,
           CatalogRole,
           Governance,
           Lazy,
           OnAws,
           OnDocker,
           OnNative,
           SecretSpec,
           ServiceDefinition,
)
from lakehouse_platform.services.lakekeeper import container
from lakehouse_platform.services.lakekeeper.config import DATABASE_NAME, LOOPBACK, MIGRATE_JOB, NAME, WAREHOUSE_JOB

NOT_NATIVE = "no build of Lakekeeper is obtainable from the package registries"

#: Why the lab and the cloud refuse it (docs/adr/0013-lakekeeper-refused-until-it-enforces-grants.md): run as it
#: is, any client that reaches it may create, commit to and drop every table, whatever its identity's grants.
REFUSED = ("refused until it enforces the stack's grants: Lakekeeper 0.13.3 authenticates only through an OpenID "
           "provider and enforces per-namespace rights only through OpenFGA, neither of which the platform runs; "
           "without them every client could create, commit to and drop every table (ADR 0013)")


DEFAULT = {
    "layer": "catalog",
    "role": "production catalog two: REST, projects and warehouses, credential vending",
    "version": "0.13.3",
    "image": "quay.io/lakekeeper/catalog:v0.13.3",
    "ports": {"http": {"internal": 8181, "external": 8381}},
    "health": {"kind": "http", "port": "http", "path": "/health",
               "command": ["CMD", "/home/nonroot/lakekeeper", "healthcheck"]},
    "memory": "256MiB",
    "depends_on": ["postgres", "lakekeeper-migrate"],
}


MIGRATE_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "migrates Lakekeeper's schema in PostgreSQL (the platform's release)",
    "version": "0.13.3",
    "image": "quay.io/lakekeeper/catalog:v0.13.3",
    "memory": "128MiB",
    "depends_on": ["postgres"],
}


WAREHOUSE_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "bootstraps Lakekeeper and creates the warehouse (its storage profile)",
    "version": steps.CURL_VERSION,
    "image": steps.CURL_IMAGE,
    "memory": "32MiB",
    "depends_on": [NAME],
}


LOOPBACK_DEFAULT = {
    "layer": "catalog",
    "role": "forwards localhost:8333 inside Lakekeeper's network namespace to the store",
    "version": "1.8.0.3",
    "image": "alpine/socat:1.8.0.3",
    "health": {"kind": "command", "command": ["CMD", "nc", "-z", "127.0.0.1", "8333"]},
    "memory": "32MiB",
    "depends_on": ["lakekeeper", "seaweedfs"],
}


CATALOG = CatalogRole(
    database=DATABASE_NAME,
    path="/catalog",
    engine_name="lakekeeper",
    warehouse=lambda spec: spec.catalog.warehouse,
    client_properties=lambda ctx: {"header.X-Iceberg-Access-Delegation": "vended-credentials"},
    vends_credentials=True,
    ready_after=(WAREHOUSE_JOB,),
)


SERVICES = (
    ServiceDefinition(
        name=MIGRATE_JOB, default=MIGRATE_JOB_DEFAULT, job_of=NAME, summary="schema migration (the platform's release)",
        docker=OnDocker(container=container.migrate_job, unavailable=REFUSED),
        native=OnNative(unavailable=NOT_NATIVE),
        aws=OnAws(task=Lazy("lakehouse_platform.services.lakekeeper.aws:migrate_ecs"), unavailable=REFUSED),
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="REST catalog in Rust with credential vending",
        docker=OnDocker(container=container.server, unavailable=REFUSED),
        native=OnNative(unavailable=NOT_NATIVE),
        aws=OnAws(task=Lazy("lakehouse_platform.services.lakekeeper.aws:ecs"), unavailable=REFUSED),
        governance=Governance(secrets=(SecretSpec("lakekeeper-encryption-key", "lakekeeperEncryptionKey",
                                                  "lab-lakekeeper-encryption-key"),)),
        catalog=CATALOG,
    ),
    ServiceDefinition(
        name=WAREHOUSE_JOB, default=WAREHOUSE_JOB_DEFAULT, job_of=NAME, summary="bootstrap + the warehouse",
        docker=OnDocker(container=container.warehouse_job, unavailable=REFUSED),
        native=OnNative(unavailable=NOT_NATIVE),
        aws=OnAws(task=Lazy("lakehouse_platform.services.lakekeeper.aws:warehouse_ecs"), unavailable=REFUSED),
        after=(LOOPBACK, WAREHOUSE_BUCKET),
    ),
    ServiceDefinition(
        name=LOOPBACK, default=LOOPBACK_DEFAULT, job_of=NAME, summary="localhost:8333 inside Lakekeeper's netns",
        docker=OnDocker(container=container.loopback, unavailable=REFUSED),
        native=OnNative(unavailable="a docker sidecar; natively every service already shares 127.0.0.1"),
        aws=OnAws(unavailable="a docker sidecar; on aws the catalogs reach S3 directly"),
    ),
)

AWS_PARTS = (
    AwsPart(name=NAME, layer=Layer.CATALOG, build=Lazy("lakehouse_platform.services.lakekeeper.aws:build"),
            enabled=lambda spec: NAME in spec.enabled_services(),
            log_sources=Lazy("lakehouse_platform.services.lakekeeper.aws:log_sources")),
)
