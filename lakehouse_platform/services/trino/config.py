"""Trino's configuration, the same on every target: its catalog files (one per catalog service and identity where
the catalog tells identities apart), security (password file, access rules from the grants, TLS names), node and JVM
settings, and the credentials its files read from the environment.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from lakehouse_platform.model import LogSpec, PlatformSpec, Target, parse_size
from lakehouse_platform.model.governance import EVERY_NAMESPACE
from lakehouse_platform.placeholders import SECRET_TOKEN, pbkdf2_of, secret
from lakehouse_platform.runtime import tables as declared_tables
from lakehouse_platform.services.capabilities import STORE
from lakehouse_platform.services.catalogs import catalog_url, gate_of
from lakehouse_platform.services.context import ServiceContext, Side, host_of, url
from lakehouse_platform.services.definition import IdentitySecret, SecretSpec
from lakehouse_platform.services.plans import IDLE_HEAP_FLAGS, properties
from lakehouse_platform.services.registry import registry

NAME = "trino"
#: Its key in the profiles output (``profiles.host.trino``).
PROFILE = "trino"
#: Java major Trino 476+ needs (natively, and the JDK its built lab image carries).
JAVA = 24


#: The Trino catalog of a gated catalog that holds the read-only identity's credentials: ``<engine name>_ro``.
READ_ONLY_SUFFIX = "_ro"
#: Trino's table privileges for each set of actions a grant allows on a namespace (the catalog's own checks
#: decide the rest): read selects; write also changes rows; manage also owns the tables (ALTER, DROP, RENAME,
#: table procedures Trino gates by ownership) and, below, the schema (CREATE TABLE, DROP SCHEMA).
TABLE_PRIVILEGES = {(): [], ("read",): ["SELECT"], ("read", "write"): ["SELECT", "INSERT", "DELETE", "UPDATE"],
                    ("read", "write", "manage"): ["SELECT", "INSERT", "DELETE", "UPDATE", "OWNERSHIP"]}


SHARED_SECRET = SecretSpec("trino-shared-secret", "trinoSharedSecret", "lab-trino-internal-communication-secret")

#: Each identity's Trino user (its name) and password (``trino-password-<identity>``).
PASSWORD = IdentitySecret("trino-password", "trinoPassword", "Trino password",
                          values=lambda identity: {"trino_user": identity})


TLS = "trino-tls"


IMAGE_ETC = "/etc/trino"


#: The first release read here with ``fs.s3.enabled`` (trino-filesystem-manager-483.jar:
#: ``FileSystemConfig.setS3Enabled`` is ``@Config("fs.s3.enabled")``, ``@LegacyConfig("fs.native-s3.enabled")``);
#: 476's jar knows only ``fs.native-s3.enabled``. Older releases keep the old name, which 483 still accepts.
S3_SWITCH_RENAMED_IN = 483


def s3_switch(version: str) -> str:
    """The property that turns on Trino's native S3 file system, in the name ``version`` knows."""
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else S3_SWITCH_RENAMED_IN
    return "fs.s3.enabled" if major >= S3_SWITCH_RENAMED_IN else "fs.native-s3.enabled"


def env_name(kind: str, identity: str) -> str:
    """The environment variable holding one identity's credential: ``S3_SECRET_KEY_READER``."""
    return f"{kind}_{identity.upper().replace('-', '_')}"


def store_properties(ctx: ServiceContext, side: Side, identity: str) -> dict[str, str]:
    """How Trino reaches table files: the lab store with one identity's keys from the environment, or S3 itself."""
    spec = ctx.spec
    switch = s3_switch(spec.pin_of(NAME))
    store = registry().provider(spec, STORE)
    if store is not None:
        return {
            switch: "true", "s3.endpoint": ctx.url(store, "s3", side),
            "s3.path-style-access": "true", "s3.region": spec.storage.region,
            "s3.aws-access-key": f"${{ENV:{env_name('S3_ACCESS_KEY', identity)}}}",
            "s3.aws-secret-key": f"${{ENV:{env_name('S3_SECRET_KEY', identity)}}}",
        }
    return {switch: "true", "s3.endpoint": f"https://s3.{spec.storage.region}.amazonaws.com",
            "s3.path-style-access": "false", "s3.region": spec.storage.region}


def trino_catalog_name(spec: PlatformSpec, engine_name: str, identity: str) -> str:
    """The Trino catalog holding ``identity``'s credentials for a catalog: the writer's is the catalog's own name
    (the profiles' default), the read-only identity's ``<name>_ro``, any other's ``<name>_<identity>``."""
    if identity == spec.governance.writer:
        return engine_name
    if identity == spec.governance.reader:
        return engine_name + READ_ONLY_SUFFIX
    return f"{engine_name}_{identity.replace('-', '_')}"


def secret_env_name(secret_name: str) -> str:
    """The environment variable Trino reads a catalog secret from (``polaris-root-secret``: ``POLARIS_ROOT_SECRET``)."""
    return secret_name.upper().replace("-", "_")


def from_env(value: str) -> str:
    """A catalog property value with each ``secret(name)`` placeholder as Trino's ``${ENV:NAME}`` reference."""
    return SECRET_TOKEN.sub(lambda m: "${ENV:" + secret_env_name(m.group(1)) + "}", value)


def rest_properties(catalog: str, client: dict[str, str]) -> dict[str, str]:
    """A catalog's REST client properties (``CatalogRole.client_properties``, the neutral form) in Trino's names.

    Secrets become environment references (``secret_env`` puts each secret in Trino's environment). A property
    Trino has no rendering for stops the preview naming it: a catalog half-configured in one engine would fail
    only when queried.
    """
    props: dict[str, str] = {}
    for key, value in client.items():
        if key == "credential":
            props.update({"iceberg.rest-catalog.security": "OAUTH2",
                          "iceberg.rest-catalog.oauth2.credential": from_env(value)})
        elif key == "token":
            props.update({"iceberg.rest-catalog.security": "OAUTH2",
                          "iceberg.rest-catalog.oauth2.token": from_env(value)})
        elif key == "scope":
            props["iceberg.rest-catalog.oauth2.scope"] = value
        elif key == "oauth2-server-uri":
            props["iceberg.rest-catalog.oauth2.server-uri"] = value
        elif key == "header.X-Iceberg-Access-Delegation" and value == "vended-credentials":
            props["iceberg.rest-catalog.vended-credentials-enabled"] = "true"
        else:
            raise ValueError(f"services.{catalog}: Trino has no catalog property for the REST client property "
                             f"{key}={value!r}; it renders credential, token, scope, oauth2-server-uri and "
                             "header.X-Iceberg-Access-Delegation=vended-credentials "
                             "(lakehouse_platform/services/trino/config.py)")
    return props


def catalogs(spec: PlatformSpec) -> dict[str, tuple[str, str]]:
    """Trino catalog -> (catalog service, identity whose credentials it holds), in registry order.

    A catalog that tells identities apart (a gate checks their tokens, or each is a principal of the catalog's
    own: Polaris) is one Trino catalog per identity, each with that identity's credentials and store keys:
    whatever Trino's own rules let through (table procedures above all, which file-based rules do not gate),
    the catalog and the store still decide as that identity. The platform's identity has none: its store key
    is the store's admin key, which no engine holds; in Trino it acts as the writer (``holder_of``). Any other
    catalog is one Trino catalog with the writer identity's credentials, and a reader gets none rather than one
    that could write.
    """
    found: dict[str, tuple[str, str]] = {}
    for name, definition in registry().catalogs().items():
        if name not in spec.enabled_services():
            continue
        assert definition.catalog is not None
        engine_name = definition.catalog.engine_name
        if gate_of(spec, name) or definition.catalog.principals is not None:
            for identity in spec.identities:
                if spec.role_of_identity(identity) != "platform":
                    found[trino_catalog_name(spec, engine_name, identity)] = (name, identity)
        else:
            found[engine_name] = (name, spec.governance.writer)
    return found


def holder_of(spec: PlatformSpec, user: str) -> str:
    """Whose credentials a Trino user's catalogs hold: its own, the writer's for the platform's identity."""
    return spec.governance.writer if spec.role_of_identity(user) == "platform" else user


def catalogs_of_users(spec: PlatformSpec) -> dict[str, list[str]]:
    """Trino user (every identity) -> the Trino catalogs it reaches: those holding its holder's credentials."""
    held: dict[str, list[str]] = {name: [] for name in spec.identities}
    for trino_catalog, (_, holder) in catalogs(spec).items():
        held[holder].append(trino_catalog)
    return {user: held[holder_of(spec, user)] for user in spec.identities}


def catalog_name_problems(spec: PlatformSpec) -> list[str]:
    """Two identities whose Trino catalogs would have one name (``etl-ro`` and the reader's ``_ro``): refused."""
    if NAME not in spec.enabled_services():
        return []
    seen: dict[str, str] = {}
    problems = []
    for name, definition in registry().catalogs().items():
        if name not in spec.enabled_services() or definition.catalog is None or not (
                gate_of(spec, name) or definition.catalog.principals is not None):
            continue
        for identity in (i for i in spec.identities if spec.role_of_identity(i) != "platform"):
            trino_catalog = trino_catalog_name(spec, definition.catalog.engine_name, identity)
            if trino_catalog in seen:
                problems.append(f"identities.{identity}: its Trino catalog {trino_catalog!r} would be the one of "
                                f"identities.{seen[trino_catalog]}; rename the identity")
            seen[trino_catalog] = identity
    return problems


def catalog_files(ctx: ServiceContext, side: Side = Side.INTERNAL) -> dict[str, str]:
    """One Iceberg catalog properties file per Trino catalog (``catalogs``).

    Credentials are read from Trino's environment (`${ENV:...}`), so the files hold no secret.
    """
    files: dict[str, str] = {}
    for trino_catalog, (name, identity) in catalogs(ctx.spec).items():
        role = registry()[name].catalog
        assert role is not None
        catalog_ctx = ServiceContext(ctx.spec, name)
        props = {
            "connector.name": "iceberg", "iceberg.catalog.type": "rest",
            "iceberg.rest-catalog.uri": catalog_url(ctx.spec, name, side),
            "iceberg.rest-catalog.warehouse": role.warehouse(ctx.spec),
            # Tables as code: the owner and promises a declared table carries as Iceberg properties, settable
            # through Trino (CREATE/ALTER ... extra_properties) where Trino creates the tables (aws).
            "iceberg.allowed-extra-properties": ",".join(dict.fromkeys(
                key for key in [*declared_tables.PROPERTY_KEYS, *ctx.spec.table_properties(),
                                *(key for table in ctx.spec.tables for key in table.properties)]
                if key not in declared_tables.TRINO_OWN_PROPERTIES)),
            **rest_properties(name, role.client_properties(catalog_ctx)),
        }
        if gate_of(ctx.spec, name):
            props.update({"iceberg.rest-catalog.security": "OAUTH2",
                          "iceberg.rest-catalog.oauth2.token": f"${{ENV:{env_name('CATALOG_TOKEN', identity)}}}"})
        if role.principals is not None:  # the identity's own principal, never the catalog's root
            principal = role.principals.properties(identity, secret(role.principals.secret_name(identity)),
                                                   f"{catalog_url(ctx.spec, name, side).rstrip('/')}/v1/oauth/tokens")
            props.update(rest_properties(name, principal))
        props.update(store_properties(ctx, side, identity))
        files[f"{trino_catalog}.properties"] = properties(props)
    return files


def schema_pattern(namespace: str) -> str:
    """The schemas a grant on ``namespace`` covers, as a Trino rule regex: the namespace, or every schema for ``*``."""
    return ".*" if namespace == EVERY_NAMESPACE else namespace + r"(\..*)?"


def access_rules(spec: PlatformSpec) -> dict[str, list[dict[str, Any]]]:
    """File-based access control from the grants (``PlatformSpec.access_of``, the one decision).

    Each user reaches only the catalogs holding its own credentials (the platform's identity: the writer's,
    with the writer's grants, which are what those catalogs can do): all of them if it may write anywhere,
    read-only otherwise. Per schema, the first matching rule wins, so each known namespace's rule comes
    before the ``*`` one: manage makes the user the schema's owner (CREATE TABLE, DROP SCHEMA) and the tables'
    (``OWNERSHIP``: ALTER, DROP); write adds INSERT, DELETE and UPDATE to SELECT; read is SELECT; nothing is
    no privilege (the schema is not even shown). A user no rule names reaches no catalog (fails closed).
    """
    catalog_rules: list[dict[str, Any]] = []
    schema_rules: list[dict[str, Any]] = []
    table_rules: list[dict[str, Any]] = []
    for user, reachable in catalogs_of_users(spec).items():
        if not reachable:
            continue
        pattern = "|".join(reachable)
        access = spec.access_of(holder_of(spec, user))
        writes = any("write" in actions for actions in access.values())
        catalog_rules.append({"user": user, "catalog": pattern, "allow": "all" if writes else "read-only"})
        for namespace, actions in access.items():
            schema = schema_pattern(namespace)
            schema_rules.append({"user": user, "catalog": pattern, "schema": schema, "owner": "manage" in actions})
            table_rules.append({"user": user, "catalog": pattern, "schema": schema,
                                "privileges": TABLE_PRIVILEGES[actions]})
    catalog_rules.append({"catalog": "system", "allow": "read-only"})
    return {"catalogs": catalog_rules, "schemas": schema_rules, "tables": table_rules}


def password_file(spec: PlatformSpec) -> str:
    """``user:<PBKDF2 hash>`` per identity (placeholders: the target renders the hashes from the secrets)."""
    return "".join(f"{name}:{pbkdf2_of(PASSWORD.secret_name(name))}\n" for name in spec.identities)


PASSWORD_DB = SecretSpec("trino-password-db", "", "", derive=password_file)


def tls_hosts(ctx: ServiceContext) -> list[str]:
    """Names the HTTPS certificate is valid for: Trino's internal host name, and loopback for host clients."""
    hosts = [host_of(ctx.spec, NAME, Side.INTERNAL), "127.0.0.1", "localhost"]
    if ctx.spec.target is Target.DOCKER:
        hosts.append(host_of(ctx.spec, NAME, Side.EXTERNAL))
    return list(dict.fromkeys(hosts))


def security_files(ctx: ServiceContext, etc: str) -> dict[str, str]:
    """The coordinator's authentication and access control files (password hashes are placeholders)."""
    return {
        f"{etc}/password-authenticator.properties": properties({
            "password-authenticator.name": "file", "file.password-file": f"{etc}/password.db",
            "file.refresh-period": "5s"}),
        f"{etc}/password.db": secret(PASSWORD_DB.name),
        f"{etc}/access-control.properties": properties({
            "access-control.name": "file", "security.config-file": f"{etc}/rules.json",
            "security.refresh-period": "10s"}),
        f"{etc}/rules.json": json.dumps(access_rules(ctx.spec), indent=2) + "\n",
    }


def config_properties(port: int, role: Literal["single", "coordinator", "worker"], discovery: str,
                      heap_bytes: int, https_port: int | None = None, keystore: str | None = None,
                      logs: LogSpec | None = None) -> str:
    """config.properties of one node: a single node that also works, a planning coordinator, or a worker.

    A coordinator with ``https_port`` serves clients over HTTPS with password authentication, and refuses
    passwords (and so every query) over plain HTTP; nodes trust each other through the shared secret.
    """
    # A single node keeps half its heap for queries; a worker 30% (Trino's heap headroom takes 30%).
    share = 5 if role == "single" else 3
    per_node_mb = max(heap_bytes * share // 10 // (1024 * 1024), 256)
    values: dict[str, object] = {"coordinator": "false" if role == "worker" else "true"}
    if role != "worker":
        values["node-scheduler.include-coordinator"] = "true" if role == "single" else "false"
    values.update({"http-server.http.port": port, "discovery.uri": discovery})
    if role == "single":
        values["query.max-memory"] = f"{per_node_mb}MB"
    values["query.max-memory-per-node"] = f"{per_node_mb}MB"
    if role != "worker" and https_port is not None:
        values.update({
            "http-server.https.enabled": "true", "http-server.https.port": https_port,
            "http-server.https.keystore.path": keystore,
            "http-server.authentication.type": "PASSWORD",
            "http-server.authentication.allow-insecure-over-http": "false",
        })
    values["internal-communication.shared-secret"] = "${ENV:TRINO_SHARED_SECRET}"
    # Trino's own request log (var/log/http-request.log; 100MB x 15 files by default) within the service's logs.
    logs = logs or LogSpec()
    values.update({"http-server.log.max-size": f"{logs.max_bytes // (1024 * 1024)}MB",
                   "http-server.log.max-history": max(logs.keep, 1)})
    return properties(values)


def jvm_config(heap_bytes: int) -> str:
    """JVM flags with an explicit heap (the container limit is the budget, the heap stays below it)."""
    flags = [
        "-server", f"-Xmx{heap_bytes // (1024 * 1024)}m", "-XX:InitialRAMPercentage=10",
        "-XX:+ExitOnOutOfMemoryError", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=32M",
        *IDLE_HEAP_FLAGS,  # an idle coordinator hands unused heap back to the OS (it falls between queries)
        "-XX:+ExplicitGCInvokesConcurrent", "-XX:ReservedCodeCacheSize=256M", "-Djdk.attach.allowAttachSelf=true",
        "-Dfile.encoding=UTF-8", "-XX:+EnableDynamicAgentLoading", "-XX:-OmitStackTraceInFastThrow",
        "-Djdk.nio.maxCachedBufferSize=2000000", "--enable-native-access=ALL-UNNAMED",
    ]
    return "\n".join(flags) + "\n"


def heap_bytes(ctx: ServiceContext) -> int:
    service = ctx.service
    return parse_size(service.heap or service.memory)


def secret_env(ctx: ServiceContext) -> dict[str, str]:
    """The credentials Trino's config and catalog files read from the environment: each catalog's identity's."""
    spec = ctx.spec
    env = {"TRINO_SHARED_SECRET": secret(SHARED_SECRET.name)}
    for name, identity in {(n, i) for n, i in catalogs(spec).values()}:
        if registry().provider(spec, STORE) is not None:
            env[env_name("S3_ACCESS_KEY", identity)] = spec.identities[identity].access_key  # not a secret
            env[env_name("S3_SECRET_KEY", identity)] = secret(f"s3-secret-key-{identity}")
        if gate_of(spec, name):
            env[env_name("CATALOG_TOKEN", identity)] = secret(f"catalog-token-{identity}")
        # The client secrets its properties file reads (``rest_properties``): the identity's own Polaris client secret.
        role = registry()[name].catalog
        assert role is not None
        client = dict(role.client_properties(ServiceContext(spec, name)))
        if role.principals is not None:  # its own client secret at a catalog where it is a principal (Polaris)
            client.update(role.principals.properties(identity, secret(role.principals.secret_name(identity))))
        for value in client.values():
            for secret_name in SECRET_TOKEN.findall(value):
                env[secret_env_name(secret_name)] = secret(secret_name)
    return dict(sorted(env.items()))


def etc_files(ctx: ServiceContext, etc: str, role: Literal["single", "coordinator", "worker"], discovery: str,
              heap: int) -> dict[str, str]:
    """Every file of Trino's etc directory for one role (catalogs, config, JVM; security on coordinators)."""
    files = {f"{etc}/catalog/{name}": body for name, body in catalog_files(ctx, Side.INTERNAL).items()}
    files[f"{etc}/jvm.config"] = jvm_config(heap)
    keystore = f"{etc}/tls/trino.pem"
    files[f"{etc}/config.properties"] = config_properties(ctx.listen_port("http"), role, discovery, heap,
                                                          https_port=ctx.listen_port("https"), keystore=keystore,
                                                          logs=ctx.service.logs)
    if role != "worker":
        files.update(security_files(ctx, etc))
        files[keystore] = secret(f"{TLS}-pem")
    return files


def service_profiles(spec: PlatformSpec) -> dict[str, Any]:
    """What services next to Trino read: its catalog files as they are deployed (the ``profiles.services`` output)."""
    return {"trino_catalogs": catalog_files(ServiceContext(spec, NAME), Side.INTERNAL)}


def client_profile(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, Any]:
    """Where a Trino client connects (HTTPS, password), the catalogs each identity reaches there (its own), and
    which one is an identity's for each catalog service (``catalog_of``: what the maintenance runs through)."""
    host, port = url(spec, NAME, "https", side).removeprefix("http://").rsplit(":", 1)
    by_identity = catalogs_of_users(spec)
    catalog_of: dict[str, dict[str, str]] = {}
    for trino_catalog, (service, holder) in catalogs(spec).items():
        for user in spec.identities:
            if holder_of(spec, user) == holder:
                catalog_of.setdefault(service, {})[user] = trino_catalog
    return {"host": host, "port": int(port), "http_scheme": "https", "user": "{trino_user}",
            "password": "{trino_password}", "certificate": TLS,
            "catalogs": by_identity[spec.governance.writer], "catalogs_by_identity": by_identity,
            "catalog_of": catalog_of}
