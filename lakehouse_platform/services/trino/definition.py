"""Trino: the distributed SQL engine in front of analysts, one catalog file per way to the tables (compute).

Whole definition: defaults, the catalog files (one per enabled catalog service, from each catalog's
``CatalogRole``; a gated catalog gets a second, read-only one), the node/config/JVM files for every role
it runs in (a single-node coordinator on docker and native; coordinator and workers on aws), its security
(below), the container, the local process, the ECS coordinator, and the native artifact (the
trino-server tarball from Maven Central, plugins pruned).

Security (governance, fails closed): clients authenticate with a password over HTTPS only (the platform
issues the certificate, ``trino-tls``); plain HTTP answers health checks and refuses queries. One Trino
user per identity (``identities``), its password the identity's ``trino-password-<name>``, hashed
(PBKDF2) into the password file. A gated catalog is one Trino catalog per identity, holding that
identity's store keys and catalog token (the writer's is the catalog's name, the read-only identity's
``<name>_ro``, another's ``<name>_<identity>``), and each user reaches only its own. File-based access
control renders the grants per schema (``access_rules``). Trino's file-based rules do not gate table
procedures (``ALTER TABLE ... EXECUTE optimize``, ``expire_snapshots``) once a catalog is readable, so
each catalog must itself be unable to do more than its identity may: the store refuses its writes where
its grants do not reach and the catalog gate refuses its commits.
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services.capabilities import SQL_ENGINE
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    AwsIngress,
    AwsPart,
    CertificateSpec,
    ClientProfile,
    Governance,
    GrantsEnforcement,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    ServiceDefinition,
)
from lakehouse_platform.services.trino import container, image, native
from lakehouse_platform.services.trino.artifact import artifact_key, fetch_server
from lakehouse_platform.services.trino.config import (
    JAVA,
    NAME,
    PASSWORD,
    PASSWORD_DB,
    PROFILE,
    SHARED_SECRET,
    TLS,
    catalog_name_problems,
    client_profile,
    service_profiles,
    tls_hosts,
)

DEFAULT = {
    "layer": "compute",
    "owner": "analytics engineering",
    "role": "distributed SQL engine with a native Iceberg connector",
    "version": "483",
    "native_version": "476",  # newest trino-server tarball on Maven Central
    # Read from plugin/iceberg: 483 ships iceberg-core 1.11.0 (the chapter), 476 ships 1.9.1.
    "bundles": {"iceberg": "1.11.0"},
    "native_bundles": {"iceberg": "1.9.1"},
    "image": "trinodb/trino:483",
    # http: health checks and node-to-node traffic only (queries need https, where passwords are checked).
    "ports": {"http": {"internal": 8080, "external": 8080}, "https": {"internal": 8443, "external": 8443}},
    "health": {"kind": "http", "port": "http", "path": "/v1/info",
               "command": ["CMD", "/usr/lib/trino/bin/health-check"], "ready_timeout_s": 240},
    "memory": "2GiB",
    # Measured natively with 1 GiB: 780-950 MB resident after the probes and an hour of maintenance (the heap
    # committed and kept); 768 MiB with periodic GC (jvm_config) runs the probes and the maintenance.
    "heap": "768MiB",
    # Disk: its logs (its request log too, within services.trino.logs).
    "disk": "512MiB",
    # Waits for each enabled catalog's setup job (uses_catalogs); nothing else: Trino resolves
    # catalogs lazily, and on aws the store is S3 itself.
}



SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="SQL engine; one Iceberg catalog file per catalog service", title="Trino",
        docker=OnDocker(image=image.IMAGE, container=container.server),
        native=OnNative(process=native.server, java=JAVA,
                        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_server,
                                                source="Maven Central io.trino:trino-server")),
        aws=OnAws(task=Lazy("lakehouse_platform.services.trino.aws:ecs"),
                  ingress=(AwsIngress("engines", "http", "engines", "Trino coordinator and workers; maintenance tasks",
                                      back="Trino coordinator and workers"),)),
        governance=Governance(secrets=(SHARED_SECRET, PASSWORD_DB), certificates=(CertificateSpec(TLS, tls_hosts),),
                              identity_secrets=(PASSWORD,),
                              enforces_grants=GrantsEnforcement("each identity's own catalog, schema and table rules")),
        runtime="lakehouse_platform.services.trino.runtime",  # how maintenance runs through it
        uses_catalogs=True,  # its catalog files point at each catalog's warehouse: wait until it exists
        provides=(SQL_ENGINE,), check=catalog_name_problems,
        profile=ClientProfile(PROFILE, client=client_profile, services=service_profiles),
        probes=ProbeHooks(smoke=Lazy("lakehouse_platform.services.trino.client:smoke"),
                          version=Lazy("lakehouse_platform.services.trino.probe:version"),
                          engine=Lazy("lakehouse_platform.services.trino.probe:engine")),
    ),
)

AWS_PARTS = (
    AwsPart(name=NAME, layer=Layer.COMPUTE, build=Lazy("lakehouse_platform.services.trino.aws:build"),
            enabled=lambda spec: NAME in spec.enabled_services(),
            log_sources=Lazy("lakehouse_platform.services.trino.aws:log_sources")),
    # Tables as code on aws: Trino creates the declared tables from a task in the VPC.
    AwsPart(name="declared-tables", layer=Layer.ORCHESTRATION,
            build=Lazy("lakehouse_platform.services.trino.aws:build_tables"),
            enabled=Lazy("lakehouse_platform.services.trino.aws:tables_enabled"),
            log_sources=Lazy("lakehouse_platform.services.trino.aws:tables_log_sources")),
)
