"""Apache Polaris: production catalog one, on PostgreSQL, OAuth2 and credential vending (catalog layer).

Whole definition: defaults, the container and its two jobs (the bootstrap job: realm and root
principal in PostgreSQL; the catalog job: the warehouse catalog with its storage and grants, over
the management API), the ECS task and jobs, and its role as a catalog (OAuth2 client credentials,
vended storage credentials). Not on native: no registry serves Polaris's server.

Read against Polaris 1.7.0 (tag apache-polaris-1.7.0):
- only S3 is a supported storage type: FILE is "considered insecure", a severe production
  readiness issue, and 1.7.0 aborts startup on one (runtime/service/.../ProductionReadinessChecks.java);
- every replica signs tokens with the one symmetric key from the stack's secrets: the default
  generates a key pair per process, so behind a load balancer a token minted by one task fails on
  the other (site/.../configuring-polaris-for-production/_index.md);
- on the lab the store has no STS: the catalog says ``stsUnavailable``, Polaris vends no keys and
  reaches the store with its own (``AWS_*``), as upstream's MinIO/RustFS guides do;
- a new catalog's ``catalog_admin`` holds only CATALOG_MANAGE_ACCESS and _METADATA
  (AtomicOperationMetaStoreManager.createCatalog), enough for root to create namespaces and grants.

Root (``polaris-root-secret``) is held by the bootstrap job (which writes it into the realm) and the catalog
job (which uses it over the management API) and by nothing else: every client is its identity's own
principal (``principals.py``: one principal, principal role and catalog role per identity, with the privileges
its grants map to), with the client secret ``polaris-client-secret-<identity>`` set by the catalog job.
Credentials Polaris vends follow that principal's privileges on the table (IcebergCatalogHandler.
authorizeLoadTable: write delegation if it holds TABLE_WRITE_DATA there, else read delegation, READ+LIST
storage actions only) and are scoped to the table's locations (the storage integration's access config).
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services import operations_support
from lakehouse_platform.services.capabilities import WAREHOUSE_BUCKET
from lakehouse_platform.services.definition import (
    AwsPart,
    CatalogPrincipals,
    CatalogRole,
    Governance,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    SecretSpec,
    ServiceDefinition,
)
from lakehouse_platform.services.polaris import container
from lakehouse_platform.services.polaris.config import (
    BOOTSTRAP_JOB,
    CATALOG_JOB,
    CLIENT_SECRET,
    DATABASE_NAME,
    NAME,
    ROOT_CLIENT_ID,
    base_location,
    check,
)

NOT_NATIVE = "no registry serves Polaris's server (Maven Central has only polaris-core); it runs on docker and aws"


DEFAULT = {
    "layer": "catalog",
    "role": "production catalog one: REST, OAuth2, catalog roles, credential vending",
    "version": "1.7.0",
    "image": "apache/polaris:1.7.0",
    "ports": {"http": {"internal": 8181, "external": 8281}, "management": {"internal": 8182, "external": 8282}},
    "health": {"kind": "http", "port": "management", "path": "/q/health",
               "command": ["CMD-SHELL", "curl -fsS http://127.0.0.1:8182/q/health >/dev/null"]},
    "memory": "1GiB",
    "heap": "640MiB",
    "depends_on": ["postgres", "polaris-bootstrap"],
}


CATALOG_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "creates the warehouse catalog in Polaris (its storage) and one principal per identity with its grants",
    "version": "0.3.0",
    "image": operations_support.OPERATIONS_IMAGE,
    "memory": "128MiB",
    "depends_on": [NAME],
}


BOOTSTRAP_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "bootstraps Polaris's realm and root principal in PostgreSQL",
    "version": "1.7.0",
    "image": "apache/polaris-admin-tool:1.7.0",
    "memory": "512MiB",
    "depends_on": ["postgres"],
}


CATALOG = CatalogRole(
    database=DATABASE_NAME,
    path="/api/catalog",
    engine_name="polaris",
    warehouse=lambda spec: spec.catalog.warehouse,
    tables_location=base_location,
    client_properties=lambda ctx: {"header.X-Iceberg-Access-Delegation": "vended-credentials"},
    vends_credentials=True,
    ready_after=(CATALOG_JOB,),
    # Each principal activates its one principal role (PRINCIPAL_ROLE:ALL is its own roles, not root's).
    principals=CatalogPrincipals(CLIENT_SECRET, "PRINCIPAL_ROLE:ALL", "polaris_client_id"),
    admin_secrets=("polaris-root-secret",),
    admin_jobs=(BOOTSTRAP_JOB, CATALOG_JOB),
    admin_client_id=ROOT_CLIENT_ID,
)


SERVICES = (
    ServiceDefinition(
        name=BOOTSTRAP_JOB, default=BOOTSTRAP_JOB_DEFAULT, job_of=NAME, summary="realm + root principal",
        docker=OnDocker(container=container.bootstrap_job),
        native=OnNative(unavailable=NOT_NATIVE),
        aws=OnAws(task=Lazy("lakehouse_platform.services.polaris.aws:bootstrap_ecs")),
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="REST catalog with OAuth2 and credential vending",
        docker=OnDocker(container=container.server),
        native=OnNative(unavailable=NOT_NATIVE),
        aws=OnAws(task=Lazy("lakehouse_platform.services.polaris.aws:ecs")),
        governance=Governance(
            secrets=(SecretSpec("polaris-root-secret", "polarisRootSecret", "lab-polaris-root-secret"),
                     SecretSpec("polaris-token-key", "polarisTokenKey", "lab-polaris-token-signing-key")),
            identity_secrets=(CLIENT_SECRET,)),  # each identity's client secret: its principal's (the catalog job's)
        catalog=CATALOG, check=check,
    ),
    ServiceDefinition(
        name=CATALOG_JOB, default=CATALOG_JOB_DEFAULT, job_of=NAME,
        summary="the warehouse catalog and one principal per identity (as root)",
        docker=OnDocker(container=container.catalog_job),
        native=OnNative(unavailable=NOT_NATIVE),
        aws=OnAws(task=Lazy("lakehouse_platform.services.polaris.aws:catalog_ecs")),
        after=(WAREHOUSE_BUCKET,),
    ),
)

AWS_PARTS = (
    AwsPart(name=NAME, layer=Layer.CATALOG, build=Lazy("lakehouse_platform.services.polaris.aws:build"),
            enabled=lambda spec: NAME in spec.enabled_services(),
            log_sources=Lazy("lakehouse_platform.services.polaris.aws:log_sources")),
)
