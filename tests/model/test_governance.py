"""Governance in the spec (lakehouse_platform/model/governance.py): an identity that would fail open is refused, each use has its own
identity and role."""

from __future__ import annotations

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from tests.support.stacks import native_spec, stack_platform

P = "lakehouse:platform"


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda p: p.setdefault("identities", {}).update({"reader": {"access_key": "reader-access-key",
                                                                "actions": ["Read", "List", "Write"],
                                                                "secret_config_key": "s3ReaderSecretKey"}}),
     f"{P}.governance.reader: identity 'reader' has Write; the read-only identity may hold only Read and List"),
    (lambda p: p.setdefault("identities", {}).update({"writer": {"access_key": "writer-access-key",
                                                                "actions": ["Admin", "Read", "Write", "List"],
                                                                "secret_config_key": "s3WriterSecretKey"}}),
     f"{P}.governance.writer: identity 'writer' has actions Admin, Read, Write, List, which make it a platform; a "
     "writer needs Write and not Admin"),
    (lambda p: p.update({"governance": {"reader": "analysts"}}),
     f"{P}.governance.reader: 'analysts' is not an identity; allowed: platform, writer, reader"),
    (lambda p: p.setdefault("identities", {}).update({"BI_Team": {"access_key": "bi-access-key", "actions": ["Read"],
                                                                 "secret_config_key": "s3BiSecretKey"}}),
     f"{P}.identities.BI_Team: 'BI_Team' is not an identity name: lowercase letters, digits and -, 2 to 31 "
     "characters, starting with a letter"),
    (lambda p: p["services"].update({"catalog-gate": {"enabled": False}}),
     f"{P}.services.catalog-gate.enabled: rest-fixture has no authentication of its own and catalog-gate is what "
     "refuses clients without a valid token; keep catalog-gate enabled while rest-fixture is"),
])
def test_an_identity_that_would_fail_open_is_refused(mutate, expected):
    platform = stack_platform("native")
    mutate(platform)
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source="Pulumi.native.yaml")
    assert info.value.errors == [expected]


def test_each_use_has_its_own_identity_and_role():
    spec = native_spec()
    assert {name: spec.role_of_identity(name) for name in spec.identities} == {
        "platform": "platform", "writer": "writer", "reader": "reader"}
    assert spec.platform_identity == "platform"
    assert (spec.governance.writer, spec.governance.reader) == ("writer", "reader")


# -- grants: data on the identity, one decision ----------------------------------------------------------------

def identity(name: str, actions: list[str], grants: dict | None = None, **extra) -> dict:
    body = {"access_key": f"{name}-access-key", "actions": actions, "secret_config_key": f"s3{name.title()}Key",
            **extra}
    if grants is not None:
        body["grants"] = grants
    return body


def platform_with(*identities: tuple[str, dict], namespaces: list[str] | None = None, **top) -> dict:
    platform = stack_platform("native")
    platform.setdefault("identities", {}).update(dict(identities))
    if namespaces is not None:
        platform.setdefault("governance", {})["namespaces"] = namespaces
    platform.update(top)
    return platform


def refusal(platform: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source="Pulumi.native.yaml")
    return info.value.errors


def test_without_grants_each_identity_has_its_roles_rights_so_existing_stacks_mean_what_they_meant():
    spec = native_spec()
    assert {name: spec.grants_of(name) for name in spec.identities} == {
        "platform": {"*": ("read", "write", "manage")},
        "writer": {"*": ("read", "write", "manage")},  # the gate let writers create and drop before grants
        "reader": {"*": ("read",)},
    }
    assert spec.known_namespaces() == ["shop"]
    assert spec.access_of("reader") == {"shop": ("read",), "*": ("read",)}
    assert spec.may("writer", "manage", "anything_made_at_run_time")
    assert not spec.may("reader", "write", "shop")


def test_a_named_namespace_replaces_every_namespace_and_nested_namespaces_follow_their_top_level():
    spec = load_platform(platform_with(
        ("etl", identity("etl", ["Read", "Write", "List"], {"*": ["read", "write"], "finance": ["read"],
                                                             "secret": []})),
        namespaces=["finance", "secret"]))
    assert spec.access_of("etl") == {"shop": ("read", "write"), "finance": ("read",), "secret": (), "*": ("read", "write")}
    assert spec.may("etl", "write", "shop.eu") and not spec.may("etl", "write", "finance.eu")
    assert not spec.may("etl", "read", "secret") and not spec.may("etl", "manage", "shop")


def test_a_team_owning_a_table_it_cannot_write_is_found_for_the_review():
    assert native_spec().owners_without_writer() == []  # identities.writer.team is the tables' owner
    platform = stack_platform("native")
    del platform["identities"]["writer"]["team"]
    assert load_platform(platform).owners_without_writer() == [
        ("shop.orders", "bookshop data engineering", "shop"), ("shop.customers", "bookshop data engineering", "shop")]
    platform["identities"]["bookshop"] = identity("bookshop", ["Read", "List"], team="bookshop data engineering")
    assert len(load_platform(platform).owners_without_writer()) == 2  # the team's identity only reads
    platform["identities"]["bookshop"] = identity("bookshop", ["Read", "Write", "List"], {"shop": ["read", "write"]},
                                                  team="bookshop data engineering")
    assert load_platform(platform).owners_without_writer() == []


E = f"{P}.identities.etl"


@pytest.mark.parametrize(("grants", "actions", "expected"), [
    ({"shop": ["write"]}, ["Read", "Write", "List"],
     f"{E}.grants.shop: write without read is refused (a writer reads a table's metadata before every commit); no "
     "action implies another: list read too, or remove write"),
    ({"shop": ["read", "manage"]}, ["Read", "Write", "List"],
     f"{E}.grants.shop: manage without write is refused (creating a table writes its first metadata file and a drop "
     "with purge deletes files: the store sees both as writes); no action implies another: list write too, or "
     "remove manage"),
    ({"shop": ["read", "read"]}, ["Read", "List"], f"{E}.grants.shop: read listed twice; list each action once"),
    ({"shop": ["read", "delete"]}, ["Read", "List"],
     f"{E}.grants.shop.1: 'delete' is not allowed; input should be 'read', 'write' or 'manage'"),
    ({"Shop": ["read"]}, ["Read", "List"],
     f"{E}.grants.Shop: 'Shop' is not a namespace: a top-level namespace (lowercase letters, digits and _, starting "
     "with a letter or _; a nested one follows its top level) or '*' for every namespace without an entry of its "
     "own"),
    ({"shop": []}, ["Read", "List"],
     f"{E}.grants.shop: an empty list grants nothing, and there is no '*' entry for it to narrow; remove it (a "
     "namespace without an entry is closed)"),
    ({"shop": ["read", "write"]}, ["Read", "List"],
     f"{E}.grants: write on 'shop' contradicts actions (Read, List): the store would refuse every write of it; add "
     "Write to actions or remove write from grants"),
    ({"shop": ["read"]}, ["Read", "Write", "List"],
     f"{E}.grants: no namespace grants write, which contradicts actions (Read, Write, List): Write makes it a "
     "writer; remove Write from actions (a reader) or grant write somewhere"),
    ({"finance": ["read"]}, ["Read", "List"],
     f"{E}.grants.finance: 'finance' is not a namespace the platform knows; known: shop (the declared tables' "
     "namespaces and governance.namespaces): add it to governance.namespaces, or use '*' for every namespace"),
])
def test_a_bad_grant_is_refused_naming_its_key_path(grants, actions, expected):
    assert refusal(platform_with(("etl", identity("etl", actions, grants)))) == [expected]


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda p: p.setdefault("identities", {}).update({"platform": {"grants": {"*": ["read", "write"]}}}),
     f"{P}.identities.platform.grants: platform is the platform's own identity (Admin at the store, which no grant "
     "narrows): it runs the catalog and creates the declared tables, so it manages every namespace; leave its "
     "grants unset and give narrower rights to an identity of their own"),
    (lambda p: p.update({"governance": {"exporter": "metrics"}}),
     f"{P}.governance.exporter: 'metrics' is not an identity; allowed: platform, writer, reader"),
    (lambda p: p.update({"governance": {"maintenance": "platform"}}),
     f"{P}.governance.maintenance: 'platform' is the platform's own identity (Admin at the store); the maintenance "
     "runs as the least identity that does its job: name one without Admin"),
    (lambda p: p.update({"governance": {"exporter": "writer"}}),
     f"{P}.governance.exporter: identity 'writer' may write (shop, *); the exporter only reads: name an identity "
     "that writes nowhere (e.g. governance.reader)"),
    (lambda p: p.setdefault("identities", {}).update({"reader": {"grants": {"shop": ["read"]}}}),
     f"{P}.governance.exporter: identity 'reader' may not read *, which the exporter watches; grant it read there, "
     "or name an identity that reads them"),
    (lambda p: p.setdefault("identities", {}).update({"writer": {"grants": {"*": ["read", "write", "manage"], "shop": ["read"]}}}),
     f"{P}.governance.maintenance: identity 'writer' may not write shop, where maintenance rewrites and expires "
     "('*': any other namespace, which a job with scope all reaches); grant it read and write there, or name an "
     "identity that has them"),
    (lambda p: p.update({"governance": {"namespaces": ["finance", "finance"]}}),
     f"{P}.governance.namespaces.1: 'finance' is listed twice; list each namespace once"),
    (lambda p: p.update({"governance": {"namespaces": ["Finance"]}}),
     f"{P}.governance.namespaces.0: 'Finance' is not a namespace: lowercase letters, digits and _, starting with a "
     "letter or _ (top-level namespaces only)"),
    (lambda p: p.setdefault("identities", {}).update({"writer": {"team": "  "}}),
     f"{P}.identities.writer.team: an empty team names nobody: name the team, or leave team unset"),
])
def test_a_grant_that_fails_open_or_names_nothing_real_is_refused(mutate, expected):
    platform = stack_platform("native")
    mutate(platform)
    assert refusal(platform) == [expected]


def test_a_namespace_the_stack_lists_may_be_granted():
    spec = load_platform(platform_with(("etl", identity("etl", ["Read", "Write", "List"], {"finance": ["read", "write"]})),
                                       namespaces=["finance"]))
    assert spec.access_of("etl") == {"shop": (), "finance": ("read", "write"), "*": ()}
