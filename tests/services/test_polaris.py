"""Polaris: one principal per identity, proven against Polaris 1.7.0's contract; its servers on aws under mocks.

The catalog job is the exact config a target (docker, aws) renders, run by ``lakehouse_platform.services.polaris.runtime``
against ``PolarisDouble`` (tests/support/polaris_double.py): a stand-in of Polaris's management and catalog APIs
that checks every request against the published OpenAPI specs of 1.7.0 and enforces privileges as Polaris does.
Then each identity's host profile, filled from the stack's credentials, is a PyIceberg client of that double: a
reader reads and cannot create, commit or drop; a writer commits; root acts nowhere but in the job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lakehouse_platform.services import profiles
from lakehouse_platform.services.plans import ContainerHost
from lakehouse_platform.services.polaris import aws as polaris_aws
from lakehouse_platform.services.polaris import definition as polaris
from lakehouse_platform.services.polaris import runtime as polaris_access
from lakehouse_platform.services.polaris.config import ACCESS_CONFIG, access_config, catalog_request, lab_storage
from lakehouse_platform.services.polaris.principals import PRIVILEGES, principal, principals, stack_principals
from tests.support.aws_graph import container_of_task, ecs_service, named
from tests.support.harness import SECRET_KEY, SECRET_SIG, ProgramRun
from tests.support.job_scripts import ROOT_SECRET, cloud_ctx, lab_ctx
from tests.support.polaris_double import ROOT, PolarisDouble

IDENTITIES = ("platform", "writer", "reader")
#: Each identity's client secret as the stack would hold it (with characters a shell or JSON could trip on).
CLIENT_SECRETS = {name: f'{name}-s3cret"&$x' for name in IDENTITIES}
ARNS = {"VENDING_ROLE_ARN": "arn:aws:iam::1:role/vending", "KMS_KEY_ARN": "arn:aws:kms:eu-west-1:1:key/k"}


def filled_env(env: dict[str, str]) -> dict[str, str]:
    """A job's environment as its container gets it: every secret placeholder filled, the ARNs known."""
    values = {"${secret:polaris-root-secret}": ROOT_SECRET,
              **{f"${{secret:polaris-client-secret-{n}}}": v for n, v in CLIENT_SECRETS.items()},
              "${platform:vending-role-arn}": ARNS["VENDING_ROLE_ARN"], "${platform:kms-key-arn}": ARNS["KMS_KEY_ARN"]}
    return {k: values.get(v, v) for k, v in env.items()}


def rendered_job(url: str, target: str = "docker") -> tuple[dict[str, Any], dict[str, str]]:
    """(config, environment) of the catalog job as the target renders it, pointed at ``url``."""
    if target == "docker":
        plan = polaris.container.catalog_job(lab_ctx(polaris.CATALOG_JOB), ContainerHost(state_dir=Path("/nonexistent")))
        config, env = json.loads(plan.uploads[ACCESS_CONFIG]), plan.env
    else:
        ecs = polaris_aws.catalog_ecs(cloud_ctx(polaris.CATALOG_JOB))
        config, env = json.loads(ecs.files[ACCESS_CONFIG]), ecs.env
    return {**config, "url": url}, filled_env(env)


@pytest.fixture
def double(serve: Callable[..., Any]) -> tuple[PolarisDouble, str]:
    """A bootstrapped Polaris double (root's secret set as the admin tool sets it) and its URL."""
    found = PolarisDouble()
    found.bootstrap(ROOT_SECRET)
    return found, serve(found).url


def run_job(config: dict[str, Any], env: dict[str, str]) -> list[str]:
    lines: list[str] = []
    polaris_access.run(config, env, log=lines.append)
    return lines


SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))


def catalog_of(identity: str, url: str) -> RestCatalog:
    """PyIceberg's REST catalog from the lab's host profile, filled with the identity's credentials as
    ``credentials.identities.<id>`` holds them (Polaris as the default catalog), pointed at the double."""
    ctx = lab_ctx(polaris.NAME)
    spec = ctx.spec.model_copy(update={"catalog": ctx.spec.catalog.model_copy(update={"default": polaris.NAME})})
    credentials = {"identities": {identity: {"polaris_client_id": identity, "polaris_client_secret":
                                             CLIENT_SECRETS[identity], "s3_access_key": "k", "s3_secret_key": "s"}}}
    profile = profiles.fill(profiles.pyiceberg(spec), credentials, identity)
    assert profile["credential"] == f"{identity}:{CLIENT_SECRETS[identity]}"
    assert profile["oauth2-server-uri"] == "http://localhost:8281/api/catalog/v1/oauth/tokens"
    return RestCatalog(identity, **{**profile, "uri": url + urlsplit(profile["uri"]).path,
                                    "oauth2-server-uri": url + urlsplit(profile["oauth2-server-uri"]).path})


def commit(catalog: RestCatalog, identifier: str) -> None:
    catalog.load_table(identifier).transaction().set_properties(probe="1").commit_transaction()


def storage_actions(catalog: RestCatalog, identifier: str) -> str:
    """What the credentials Polaris vended with the table allow (the double names them in the load's config)."""
    return str(catalog.load_table(identifier).io.properties["storage-actions"])


def no_root_after(double: PolarisDouble, mark: int) -> None:
    """The platform's promise: root acts in the catalog job and nowhere else (a client holding it breaks this)."""
    late = [f"{c.method} {c.path}" for c in double.calls[mark:] if c.principal == ROOT]
    assert not late, f"root acted outside the catalog job: {late}"


# -- the catalog job against the double -----------------------------------------------------------------------


def test_the_catalog_job_makes_one_principal_per_identity_within_polaris_s_contract(double) -> None:
    fake, url = double
    config, env = rendered_job(url)
    first = run_job(config, env)
    assert fake.contract_violations == []
    assert set(fake.principals) == {ROOT, *IDENTITIES}
    for name in IDENTITIES:  # its own client id and secret, its own principal role and catalog role
        assert (fake.principals[name].client_id, fake.principals[name].secret) == (name, CLIENT_SECRETS[name])
        assert fake.principals[name].roles == {name}
        assert fake.principal_roles[name] == {("warehouse", name)}
        assert fake.principals[name].properties == {"managed-by": "lakehouse-platform"}
    privileges = {name: {g["privilege"] for g in fake.grants_of("warehouse", name)} for name in IDENTITIES}
    assert privileges["reader"] == set(PRIVILEGES["read"])
    assert privileges["writer"] == privileges["platform"] == {p for a in ("read", "write", "manage")
                                                              for p in PRIVILEGES[a]}
    assert {g["type"] for name in IDENTITIES for g in fake.grants_of("warehouse", name)} == {"catalog"}
    # catalog_admin keeps what Polaris gave it: root manages the catalog, and reads no table data.
    assert {g["privilege"] for g in fake.grants_of("warehouse", "catalog_admin")} == {
        "CATALOG_MANAGE_ACCESS", "CATALOG_MANAGE_METADATA"}
    assert first[-1] == "all steps done"
    again = run_job(config, env)  # idempotent: everything exists, the grants are exactly the declared ones
    assert not any(line.endswith("(HTTP 201)") and line.startswith(("create", "grant", "revoke")) for line in again)
    assert fake.contract_violations == []
    everything = "\n".join(first + again)
    assert ROOT_SECRET not in everything and not any(v in everything for v in CLIENT_SECRETS.values())


def test_each_profile_acts_as_its_identity_and_a_reader_cannot_write(double) -> None:
    fake, url = double
    run_job(*rendered_job(url))
    mark = len(fake.calls)
    platform, writer, reader = (catalog_of(name, url) for name in IDENTITIES)
    platform.create_namespace("shop")
    platform.create_table("shop.orders", SCHEMA)
    # The reader lists and loads; Polaris vends it credentials that read (READ, LIST), never write.
    assert reader.list_namespaces() == [("shop",)]
    assert storage_actions(reader, "shop.orders") == "LIST,READ"
    # ... and cannot create, commit, drop or rename: refused (403), the catalog unchanged.
    refusals = {
        "create": lambda: reader.create_table("shop.mine", SCHEMA),
        "commit": lambda: commit(reader, "shop.orders"),
        "drop": lambda: reader.drop_table("shop.orders"),
        "purge": lambda: reader.purge_table("shop.orders"),
        "rename": lambda: reader.rename_table("shop.orders", "shop.o2"),
        "create namespace": lambda: reader.create_namespace("mine"),
        "drop namespace": lambda: reader.drop_namespace("shop"),
    }
    for what, attempt in refusals.items():
        with pytest.raises(ForbiddenError):
            attempt()
        assert what  # each one refused
    assert set(fake.tables["warehouse"]) == {(("shop",), "orders")} and fake.namespaces["warehouse"] == {("shop",)}
    assert fake.tables["warehouse"][(("shop",), "orders")]["properties"] == {}
    # The writer commits, with vended credentials that write; the default grants let it create and drop too.
    assert storage_actions(writer, "shop.orders") == "LIST,READ,WRITE"
    commit(writer, "shop.orders")
    assert fake.tables["warehouse"][(("shop",), "orders")]["properties"] == {"probe": "1"}
    platform.drop_table("shop.orders")
    # No client reaches the management API: a principal of the platform holds no service privilege.
    token = requests.post(f"{url}/api/catalog/v1/oauth/tokens", timeout=10, data={
        "grant_type": "client_credentials", "client_id": "writer", "client_secret": CLIENT_SECRETS["writer"],
        "scope": "PRINCIPAL_ROLE:ALL"}).json()["access_token"]
    assert requests.get(f"{url}/api/management/v1/principals", headers={"Authorization": f"Bearer {token}"},
                        timeout=10).status_code == 403
    assert fake.callers() == {ROOT, *IDENTITIES} and fake.contract_violations == []
    no_root_after(fake, mark)


def test_a_client_holding_root_fails_the_no_root_outside_bootstrap_check(double) -> None:
    """The check above is real: a profile filled with root's credential writes, and the check says so."""
    fake, url = double
    run_job(*rendered_job(url))
    mark = len(fake.calls)
    CLIENT_SECRETS["root"] = ROOT_SECRET
    try:
        holding_root = catalog_of("root", url)
    finally:
        del CLIENT_SECRETS["root"]
    holding_root.create_namespace("shop")  # root may: what a profile holding it would do unchecked
    with pytest.raises(AssertionError, match="root acted outside the catalog job"):
        no_root_after(fake, mark)


def test_namespace_grants_become_namespace_privileges_and_a_narrowed_namespace_stays_closed(double) -> None:
    fake, url = double
    grants = {"team": {"*": ["read"], "shop": ["read", "write"]},
              "analyst": {"*": ["read", "write"], "finance": ["read"]}}
    found = principals(grants, ["shop", "finance"])
    team, analyst = found
    assert set(team.catalog) == set(PRIVILEGES["read"]) and dict(team.namespaces) == {"shop": PRIVILEGES["write"]}
    # A named namespace narrows '*': write moves from the catalog to each namespace that still allows it.
    assert set(analyst.catalog) == set(PRIVILEGES["read"])
    assert dict(analyst.namespaces) == {"shop": PRIVILEGES["write"]}
    _, env = rendered_job(url)
    ctx = lab_ctx(polaris.CATALOG_JOB)
    config = {**access_config(ctx, catalog_request(ctx.spec, lab_storage(ctx)), found), "url": url}
    env = {**env, "POLARIS_CLIENT_SECRET_TEAM": "team-secret", "POLARIS_CLIENT_SECRET_ANALYST": "analyst-secret"}
    run_job(config, env)
    assert fake.namespaces["warehouse"] == {("shop",)}  # made before the grants that name it
    assert fake.contract_violations == []
    for namespace in ("shop", "finance", "other"):
        fake.namespaces["warehouse"].add((namespace,))
        fake.tables["warehouse"][((namespace,), "t")] = {"properties": {}, "snapshots": 0, "uuid": str(uuid4())}
    CLIENT_SECRETS.update(team="team-secret", analyst="analyst-secret")
    try:
        clients = {name: catalog_of(name, url) for name in ("team", "analyst")}
    finally:
        del CLIENT_SECRETS["team"], CLIENT_SECRETS["analyst"]

    def commits(name: str) -> dict[str, bool]:
        found = {}
        for namespace in ("shop", "finance", "other"):
            try:
                commit(clients[name], f"{namespace}.t")
                found[namespace] = True
            except ForbiddenError:
                found[namespace] = False
        return found

    assert commits("team") == {"shop": True, "finance": False, "other": False}
    # Polaris cannot subtract on one namespace what the catalog grants: so 'other', declared by nobody, is closed.
    assert commits("analyst") == {"shop": True, "finance": False, "other": False}
    assert storage_actions(clients["analyst"], "finance.t") == "LIST,READ"


def test_the_catalog_job_converges_grants_and_principals(double) -> None:
    fake, url = double
    config, env = rendered_job(url)
    run_job(config, env)
    fake.catalog_roles[("warehouse", "reader")].append({"type": "catalog", "privilege": "TABLE_WRITE_DATA"})
    fake.principals["gone"] = type(fake.principals["reader"])("gone", "gone", "x", {"managed-by": "lakehouse-platform"})
    fake.principal_roles["gone"] = set()
    fake.catalog_roles[("warehouse", "gone")] = []
    fake.principals["alice"] = type(fake.principals["reader"])("alice", "alice", "y")  # not the platform's
    lines = run_job(config, env)
    assert "revoke TABLE_WRITE_DATA on catalog from catalog role reader: done (HTTP 201)" in lines
    assert {g["privilege"] for g in fake.grants_of("warehouse", "reader")} == set(PRIVILEGES["read"])
    assert "gone" not in fake.principals and "gone" not in fake.principal_roles
    assert ("warehouse", "gone") not in fake.catalog_roles
    assert "alice" in fake.principals  # a principal the platform did not make is left alone


def test_the_catalog_job_waits_for_polaris_but_not_for_a_refusal(double) -> None:
    fake, url = double
    fake.unavailable = 1
    config, env = rendered_job(url)
    lines = run_job({**config, "retry_s": 0.05}, env)
    assert lines[0] == "waiting for Polaris's token endpoint: HTTP 503" and lines[-1] == "all steps done"
    config, env = rendered_job(url)
    with pytest.raises(polaris_access.JobError, match="Polaris token endpoint: HTTP 401"):
        run_job(config, {**env, "POLARIS_ROOT_SECRET": "not-root's"})


def test_the_catalog_job_fails_with_the_step_the_status_and_the_body(double) -> None:
    fake, url = double
    fake.failures[("POST", "/api/management/v1/catalogs")] = 500
    config, env = rendered_job(url)
    with pytest.raises(polaris_access.JobError, match=r"create catalog warehouse: HTTP 500: .*boom: storage rejected"):
        run_job(config, env)
    assert set(fake.principals) == {ROOT}  # nothing after the failed step
    missing = {k: v for k, v in env.items() if k != "POLARIS_CLIENT_SECRET_READER"}
    with pytest.raises(polaris_access.JobError, match="not set in the job's environment: POLARIS_CLIENT_SECRET_READER"):
        polaris_access.run(config, missing, log=lambda line: None)


def test_the_catalog_job_on_aws_names_the_vending_role_and_the_key(double) -> None:
    fake, url = double
    run_job(*rendered_job(url, target="aws"))
    storage = fake.catalogs["warehouse"]["storageConfigInfo"]
    assert storage == {"storageType": "S3", "allowedLocations": ["s3://lakehouse-warehouse-prod/polaris/"],
                       "roleArn": ARNS["VENDING_ROLE_ARN"], "region": "eu-west-1",
                       "currentKmsKey": ARNS["KMS_KEY_ARN"], "allowedKmsKeys": [ARNS["KMS_KEY_ARN"]]}
    assert set(fake.principals) == {ROOT, *IDENTITIES} and fake.contract_violations == []


def test_the_lab_catalog_request_is_the_lab_store(double) -> None:
    fake, url = double
    run_job(*rendered_job(url))
    assert fake.catalogs["warehouse"] == catalog_request(lab_ctx(polaris.CATALOG_JOB).spec,
                                                         lab_storage(lab_ctx(polaris.CATALOG_JOB)))["catalog"]


def test_the_stack_s_identities_are_its_principals() -> None:
    spec = lab_ctx(polaris.NAME).spec
    assert [p.name for p in stack_principals(spec)] == list(spec.identities)
    reader = principal("reader", {"*": ["read"]}, [])
    # Listing the catalog's namespaces is NAMESPACE_LIST on the catalog: a reader of any namespace has it.
    assert reader.catalog == PRIVILEGES["read"] and reader.grant_resources()[0] == {
        "type": "catalog", "privilege": "NAMESPACE_LIST"}
    assert principal("nobody", {}, ["shop"]).catalog == ()


# -- aws, under Pulumi mocks ---------------------------------------------------------------------------------


def test_polaris_replicas_share_one_token_key_and_support_s3_only(cloud: ProgramRun) -> None:
    """Issue #13 item 11: two tasks behind the load balancer, one signing key from Secrets Manager."""
    assert ecs_service(cloud, "polaris").inputs["desiredCount"] == 2
    definition = container_of_task(cloud, "lakehouse-polaris")
    env = {e["name"]: e["value"] for e in definition["environment"]}
    assert "-Dpolaris.authentication.token-broker.type=symmetric-key" in env["JAVA_OPTS_APPEND"]
    assert env['polaris.features."SUPPORTED_CATALOG_STORAGE_TYPES"'] == '["S3"]'
    secrets = {s["name"]: s["valueFrom"] for s in definition["secrets"]}
    assert secrets["polaris.authentication.token-broker.symmetric-key.secret"] == (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-token-key-AbCdEf")
    version = named(cloud, "aws:secretsmanager/secretVersion:SecretVersion", "lakehouse-polaris-token-key-value")
    assert version.inputs["secretString"] == {SECRET_KEY: SECRET_SIG, "value": "test-polaris-token-signing-key"}


def test_the_rendered_graphs_make_one_principal_per_identity(lab_run: ProgramRun, cloud: ProgramRun) -> None:
    """Issue 23 on lab and aws: the catalog job each graph renders makes every identity its own principal."""
    from tests.support.aws_graph import written_files

    uploads = {u["file"]: u["content"] for u in lab_run.named("polaris-catalog").inputs["uploads"]}
    task = container_of_task(cloud, "lakehouse-polaris-catalog")
    for config in (json.loads(uploads[ACCESS_CONFIG]), json.loads(written_files(task["command"][0])[ACCESS_CONFIG])):
        assert [(p["name"], p["client_id"], p["principal_role"], p["catalog_role"], p["secret_env"])
                for p in config["principals"]] == [
            (n, n, n, n, f"POLARIS_CLIENT_SECRET_{n.upper()}") for n in IDENTITIES]
        assert "secret" not in json.dumps(config).replace("secret_env", "").replace("CLIENT_SECRET", "")


def test_an_identity_named_root_is_refused_where_polaris_runs() -> None:
    """Polaris's own root principal is ``root``: an identity of that name would be the same principal."""
    from lakehouse_platform.config import ConfigError, load_platform
    from tests.support.stacks import stack_platform

    root = {"root": {"access_key": "root-access-key", "actions": ["Read", "List"], "secret_config_key": "s3RootKey"}}
    lab = {**stack_platform("lab"), "identities": root}
    with pytest.raises(ConfigError) as refused:
        load_platform(lab)
    assert refused.value.errors == [
        "lakehouse:platform.identities.root: 'root' is Polaris's own root principal (its client id too), and every "
        "identity is a Polaris principal of that name: name the identity otherwise, or disable polaris"]
    assert "root" in load_platform({**stack_platform("native"), "identities": root}).identities  # no Polaris there
