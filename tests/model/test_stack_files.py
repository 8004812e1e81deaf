"""The stack files: the examples this repository ships (a team edits them: only that they load, validate and carry
their salt is checked here), and the tests' own (``tests/support/stack_files``, what every other test reads).

- Every example stack the project's workspace deploys with its passphrase (native, lab, lab-offline) carries its
  ``encryptionsalt``, valid for the documented lab passphrase: Pulumi writes the salt into the stack file on the
  first ``up`` when it is missing, which left ``git status`` dirty after the first ``make up STACK=lab``.
- ``Pulumi.lab-offline.yaml`` is the lab with built images and without Polaris and Lakekeeper, through
  ``lakehouse:extends`` (no edit of the committed lab file, nothing repeated).
- Which stacks are disposable (the probes' disruptive ones run there): the lab's, never the cloud's or the native one.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from lakehouse_platform.config import ConfigError, extended, load_platform, load_stack
from lakehouse_platform.control.isolated import FIXTURES, STACKS, isolated_platform
from lakehouse_platform.control.workspace import LAB_PASSPHRASE
from lakehouse_platform.model import Target
from tests.support import REPO_ROOT
from tests.support.harness import cached_run
from tests.support.stacks import spec_of, stack_platform

#: The example team project (examples/team-project): its stack files load and validate too.
TEAM_PROJECT = REPO_ROOT / "examples" / "team-project"

#: Pulumi's passphrase secrets manager (pkg/secrets/passphrase): the key is PBKDF2-SHA256 of the passphrase over the
#: salt, 1,000,000 rounds, 32 bytes; the salt state is "v1:<salt>:v1:<nonce>:<AES-256-GCM of 'pulumi'>".
PBKDF2_ROUNDS = 1_000_000


def committed_stacks() -> list[str]:
    """The stack files of the repository (not an isolated stack's generated file)."""
    names = [p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in REPO_ROOT.glob("Pulumi.*.yaml")]
    return sorted(n for n in names if n not in STACKS and n != "lab-run")


def salt_opens_with(state: str, passphrase: str) -> bool:
    version, salt, crypter, nonce, sealed = state.split(":")
    assert (version, crypter) == ("v1", "v1"), state
    key = PBKDF2HMAC(hashes.SHA256(), 32, base64.b64decode(salt), PBKDF2_ROUNDS).derive(passphrase.encode())
    try:
        return AESGCM(key).decrypt(base64.b64decode(nonce), base64.b64decode(sealed), None) == b"pulumi"
    except Exception:  # noqa: BLE001 - InvalidTag: another passphrase's salt
        return False


def test_the_repository_has_the_stacks_the_docs_name():
    assert committed_stacks() == ["cloud", "lab", "lab-offline", "native"]


@pytest.mark.parametrize("root,stack", [*((REPO_ROOT, s) for s in ("native", "lab", "lab-offline", "cloud")),
                                        *((TEAM_PROJECT, s) for s in ("dev", "lab", "cloud"))])
def test_every_example_stack_file_loads_and_validates(root, stack):
    """The shipped examples (this repository's, the team project's) still load and validate; what they say is theirs
    to change, so no other test reads them."""
    spec = load_stack(stack, root)
    assert spec.target in (Target.NATIVE, Target.DOCKER, Target.AWS)


def test_the_tests_stacks_are_the_examples_as_shipped_when_they_were_taken():
    """The fixtures started as copies of the examples (their header says so); they are the tests' from then on."""
    assert sorted(p.name for p in FIXTURES.glob("Pulumi.*.yaml")) == sorted(f"Pulumi.{s}.yaml" for s in
                                                                           ("cloud", "lab", "lab-offline", "native"))
    for path in FIXTURES.glob("Pulumi.*.yaml"):
        assert path.read_text().startswith("# The tests' own stack (tests/support/stack_files)"), path.name


@pytest.mark.parametrize("stack", ["native", "lab", "lab-offline"])
def test_every_passphrase_stack_carries_its_salt_so_the_first_up_writes_nothing(stack):
    document = yaml.safe_load((REPO_ROOT / f"Pulumi.{stack}.yaml").read_text())
    assert load_stack(stack, REPO_ROOT).target in (Target.NATIVE, Target.DOCKER)  # deployed by the project's workspace
    assert "encryptionsalt" in document, f"Pulumi.{stack}.yaml: the first up would write its salt into the file"
    assert salt_opens_with(document["encryptionsalt"], LAB_PASSPHRASE)
    assert not salt_opens_with(document["encryptionsalt"], "another passphrase")


def test_the_cloud_stack_leaves_its_secrets_provider_to_stack_init():
    document = yaml.safe_load((REPO_ROOT / "Pulumi.cloud.yaml").read_text())
    assert "encryptionsalt" not in document  # awskms:// at `pulumi stack init` (its runbook), never a passphrase


def test_the_offline_lab_is_the_lab_on_built_images_without_polaris_and_lakekeeper():
    lab, offline = spec_of("lab"), spec_of("lab-offline")
    assert (lab.lab.images, offline.lab.images) == ("upstream", "built")
    gone = set(lab.enabled_services()) - set(offline.enabled_services())
    assert "polaris" in gone and all(n.startswith(("polaris", "lakekeeper")) for n in gone)
    assert not {"polaris", "lakekeeper"} & set(offline.enabled_services())  # no artifact to build their images from
    assert set(offline.enabled_services()) <= set(lab.enabled_services())
    same = ("target", "name", "disposable", "catalog", "flink", "maintenance", "tables", "layers")
    assert {k: getattr(offline, k) for k in same} == {k: getattr(lab, k) for k in same}
    assert offline.services["trino"].owner == "analytics engineering"  # the lab's own override, inherited


def test_a_bad_extends_is_refused_naming_the_key_and_what_is_allowed(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"lakehouse:extends: no stack file Pulumi\.nope\.yaml; allowed: .*lab"):
        extended({}, "nope", FIXTURES)
    with pytest.raises(ConfigError, match=r"lakehouse:extends: \['lab'\] is not a stack name"):
        extended({}, ["lab"])
    (tmp_path / "Pulumi.a.yaml").write_text("config:\n  lakehouse:extends: b\n  lakehouse:platform: {}\n")
    with pytest.raises(ConfigError, match=r"lakehouse:extends: a extends b itself; name a stack that extends none"):
        extended({}, "a", tmp_path)
    assert extended({"name": "x"}, None) == {"name": "x"}  # no extends: the stack's own object


def test_only_the_labs_and_the_isolated_stacks_are_disposable():
    assert spec_of("lab").disposable and spec_of("lab-offline").disposable
    assert not spec_of("native").disposable and not spec_of("cloud").disposable
    assert isolated_platform("verify")[0]["disposable"] is True  # make verify probes a throwaway copy, disruptively
    assert load_platform(isolated_platform("e2e", overrides={"disposable": False})[0]).disposable is False


def test_the_outputs_say_which_stack_they_are_and_whether_it_is_disposable():
    run = cached_run("lab", stack_platform("lab"))
    assert (run.outputs["stack"], run.outputs["disposable"]) == ("lab", True)
    assert cached_run("cloud", stack_platform("cloud")).outputs["disposable"] is False
