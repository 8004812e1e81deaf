"""Governance in the spec (infra/spec/governance.py): an identity that would fail open is refused, each use has its own
identity and role."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, load_platform
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
