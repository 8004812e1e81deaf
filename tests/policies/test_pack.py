"""The pack as a whole: every stack passes every rule, the registry, enforcement levels, policy config,
the wrappers around pulumi_policy, and the pack under the real Pulumi CLI."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.registry import POLICIES, validate_all
from lakehouse_platform.policies.wire import SECRET_SIG, SIG_KEY, UNKNOWN_VALUES
from tests.support import REPO_ROOT
from tests.support.policy_support import (
    PROJECT,
    ROOT,
    UNKNOWN_STRING,
    aws,
    cloud_context,
    ecs_task,
    graph,
    isolated_pulumi_env,
    stack_platform,
    warehouse_bucket,
)


def test_wire_forms_are_pulumis():
    from pulumi_policy.deserialize import SPECIAL_SECRET_SIG, SPECIAL_SIG_KEY
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    assert (SIG_KEY, SECRET_SIG) == (SPECIAL_SIG_KEY, SPECIAL_SECRET_SIG)
    assert UNKNOWN_STRING_VALUE in UNKNOWN_VALUES
    assert UNKNOWN_STRING == UNKNOWN_STRING_VALUE


def test_the_registry_holds_every_rule_module_once():
    from lakehouse_platform.policies.registry import DOMAINS, POLICY_NAMES

    assert [p.name for p in POLICIES] == [p.name for domain in DOMAINS for p in domain.POLICIES]
    assert len(set(POLICY_NAMES)) == len(POLICY_NAMES) == len(POLICIES)
    assert {p.scope for p in POLICIES} == {"resource", "stack"}


@pytest.mark.parametrize("stack", ["lab", "cloud", "native"])
def test_every_resource_of_the_stack_passes_every_enforced_rule(stack):
    resources, context = graph(stack)
    levels = pack_config.levels_for(stack)
    found = validate_all(resources, context)
    broken = {name: msgs for name, msgs in found.items() if msgs and levels[name] == "mandatory"}
    assert broken == {}, "\n".join(m for msgs in broken.values() for m in msgs)
    assert len(resources) > 10


def test_hand_made_aws_resources_that_keep_the_contracts_pass():
    context = cloud_context()
    trino = ecs_task("trino", [{"name": "trino", "image": "trinodb/trino:483@sha256:" + "b" * 64, "memory": 4096,
                                "essential": True, "healthCheck": {"command": ["CMD", "/usr/lib/trino/bin/health-check"]},
                                "environment": [{"name": "TRINO_ENV", "value": "prod"}],
                                "secrets": [{"name": "POLARIS_CLIENT_SECRET_WRITER", "valueFrom": "arn:aws:secretsmanager:x"}]}],
                     "trino")
    service = aws("aws:ecs/service:Service", "trino", "compute", {"taskDefinition": "lakehouse-cloud-trino"}, service="trino")
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 14,
                                                                      "manageMasterUserPassword": True}, service="postgres")
    lifecycle = aws("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "warehouse-lifecycle", "storage",
                    {"bucket": "lakehouse-warehouse-prod", "rules": [
                        {"id": "noncurrent", "status": "Enabled", "filter": {},
                         "noncurrentVersionExpiration": {"noncurrentDays": 30},
                         "abortIncompleteMultipartUpload": {"daysAfterInitiation": 7}}]}, tags=False)
    resources = [*warehouse_bucket(), trino, service, rds, lifecycle]
    assert {k: v for k, v in validate_all(resources, context).items() if v} == {}


def test_enforcement_levels_per_stack():
    assert set(pack_config.levels_for("lab")) == {p.name for p in POLICIES}
    assert pack_config.levels_for("lab")["layer-ownership"] == "mandatory"
    assert pack_config.levels_for("native")["image-digest-advised"] == "disabled"
    assert pack_config.levels_for("some-new-stack")["image-digest-advised"] == "advisory"
    table = {"*": {"memory-limit": "advisory"}, "lab": {"memory-limit": "disabled"}}
    assert pack_config.levels_for("lab", table)["memory-limit"] == "disabled"
    assert pack_config.levels_for("cloud", table)["memory-limit"] == "advisory"


def test_enforcement_file_with_unknown_policy_or_level_is_refused(tmp_path):
    bad = tmp_path / "enforcement.yaml"
    bad.write_text("lab:\n  memory-limits: advisory\n  image-pinned: sometimes\n")
    with pytest.raises(pack_config.EnforcementError) as caught:
        pack_config.load_enforcement(bad)
    assert str(caught.value).splitlines() == [
        "enforcement.yaml: lab.memory-limits: unknown policy; known: " + ", ".join(p.name for p in POLICIES),
        "enforcement.yaml: lab.image-pinned: 'sometimes' is not a level; allowed: advisory, mandatory, disabled",
    ]


def test_rendered_policy_config_carries_levels_and_the_contract(capsys, monkeypatch):
    from lakehouse_platform.cli import main

    monkeypatch.setenv("LAKEHOUSE_PROJECT", str(ROOT))  # the tests' own project (lakehouse -C)
    assert main(["policy-pack", "--config", "cloud"]) == 0
    rendered = json.loads(capsys.readouterr().out)
    assert set(rendered) == {p.name for p in POLICIES}
    entry = rendered["recovery-backup-retention"]
    assert entry["enforcementLevel"] == "mandatory"
    assert entry["context"]["recovery"] == {"backup_retention_days": 14}
    assert entry["context"]["layers"]["governance"]["owner"] == "security, executed by platform"
    assert pack_config.context_of(entry).backup_retention_days == 14


def test_pack_wrappers_report_through_pulumi_policy():
    """The pack's ResourceValidationPolicy sees the props as the engine sends them (proxied, secrets kept)."""
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs
    from pulumi_policy.proxy import unknown_checking_proxy

    import lakehouse_platform.policies.engine as pack

    policies = {p.name: p for p in pack.build_policies("native")}
    assert policies["image-digest-advised"].enforcement_level is EnforcementLevel.DISABLED
    wire = {"labels": {"lakehouse.layer": "catalog", "lakehouse.owner": "platform"},
            "env": {"POSTGRES_PASSWORD": {SIG_KEY: SECRET_SIG, "value": "pw"}, "S3_SECRET_KEY": "plain",
                    "CATALOG_URI": UNKNOWN_STRING},
            "health": {"kind": "tcp", "port": 5432}}
    props = unknown_checking_proxy(pack.deserialize_keeping_secrets(wire))
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [],
                                 f"urn:pulumi:native::{PROJECT}::platform:layers:Catalog::lakehouse-catalog")
    urn = f"urn:pulumi:native::{PROJECT}::platform:layers:Catalog$pulumi-python:dynamic/native:LocalService::postgres"
    args = ResourceValidationArgs("pulumi-python:dynamic/native:LocalService", props, urn, "postgres", opts, None,
                                  {"context": pack_config.context_for_stack("native", ROOT)})
    reported: list[str] = []
    policies["secrets-not-plaintext"].validate(args, lambda msg, urn=None: reported.append(msg))
    policies["catalog-no-in-memory-sqlite"].validate(args, lambda msg, urn=None: reported.append(msg))
    assert reported == [
        "native:LocalService 'postgres' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable S3_SECRET_KEY holds a credential in plain text; make the value a Pulumi secret (config --secret or "
        "pulumi.Output.secret)"
    ]


def test_pack_reads_the_stack_config_the_engine_passes():
    import lakehouse_platform.policies.engine as pack

    saved = dict(pack.STATE)
    try:
        pack.STATE.update(stack="cloud", context=None, context_error=None,
                          config={"lakehouse:platform": json.dumps(stack_platform("cloud")), "aws:region": "eu-west-1"})
        context = pack.stack_context(None)
        assert context is not None and context.stack == "cloud" and context.backup_retention_days == 14
        explicit = pack.stack_context({"context": pack_config.context_for_stack("lab", ROOT)})
        assert explicit is not None and explicit.stack == "lab"
    finally:
        pack.STATE.clear()
        pack.STATE.update(saved)


def test_the_policy_pack_ships_in_the_package_and_runs_on_the_commands_python(capsys):
    """It names no virtualenv (it lives in one, or in a checkout): the engine runs it with PULUMI_PYTHON_CMD, which
    the commands set to their own interpreter; ``lakehouse policy-pack`` prints where it is."""
    from lakehouse_platform.cli import main
    from lakehouse_platform.control.workspace import pulumi_env
    from lakehouse_platform.paths import PACKAGE_DIR

    project = yaml.safe_load((pack_config.PACK_DIR / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python" and "virtualenv" not in project["runtime"].get("options", {})
    assert pack_config.PACK_DIR == PACKAGE_DIR / "policies"
    assert main(["policy-pack"]) == 0
    assert capsys.readouterr().out.strip() == str(pack_config.PACK_DIR)
    assert pulumi_env()["PULUMI_PYTHON_CMD"] == sys.executable


# --------------------------------------------------------------------------------------------
# The pack under the real CLI (when the project-local Pulumi is built)
# --------------------------------------------------------------------------------------------

SMOKE_PROGRAM = '''
import pulumi, pulumi.dynamic

class Provider(pulumi.dynamic.ResourceProvider):
    serialize_as_secret_always = False
    def create(self, props):
        return pulumi.dynamic.CreateResult("x", props)

class LocalService(pulumi.dynamic.Resource, module="native", name="LocalService"):
    def __init__(self, name, props, opts=None):
        super().__init__(Provider(), name, props, opts)

class Catalog(pulumi.ComponentResource):
    def __init__(self, name):
        super().__init__("platform:layers:Catalog", name, None, None)
        labels = {"lakehouse.platform": "lakehouse", "lakehouse.layer": "catalog", "lakehouse.owner": "platform",
                  "lakehouse.service": "rest-fixture"}
        LocalService("rest-fixture", {
            "service": "rest-fixture", "labels": labels, "data_dir": "/tmp/smoke/rest-fixture",
            "health": {"kind": "tcp", "port": 8181}, "memory_budget_bytes": 512 * 1024 * 1024,
            "env": {"CATALOG_URI": "jdbc:sqlite::memory:", "AWS_SECRET_ACCESS_KEY": pulumi.Output.secret("s3cr3t"),
                    "POSTGRES_PASSWORD": "plain-password",
                    "LAKEHOUSE_STORE_KEY": pulumi.Output.secret("smoke-store-secret-key"),
                    "STORE_AUTH": "smoke-store-secret-key", "COPY_OF_CONFIG": "smoke-config-value-1"},
        }, pulumi.ResourceOptions(parent=self))
        self.register_outputs({})

Catalog("lakehouse-catalog")
'''


def chosen_pulumi() -> Path:
    """The Pulumi CLI the project runs (yours or its build: lakehouse_platform.control.toolchain); skips where there is none."""
    from lakehouse_platform.control import toolchain

    tool = toolchain.current()
    if tool is None:
        pytest.skip("no Pulumi CLI: neither yours on PATH nor the project's build (make pulumi)")
    return tool.pulumi


@pytest.mark.toolchain
def test_pack_loads_and_refuses_in_a_real_preview(tmp_path):
    pulumi_bin = chosen_pulumi()
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(textwrap.dedent(f"""\
        name: {PROJECT}
        runtime:
          name: python
          options:
            toolchain: pip
            virtualenv: {REPO_ROOT / '.venv'}
        """))
    (project / "__main__.py").write_text(SMOKE_PROGRAM)
    (project / "Pulumi.policy-smoke.yaml").write_text(
        yaml.safe_dump({"config": {"lakehouse:platform": stack_platform("native")}}))
    env = isolated_pulumi_env(tmp_path, "policy-smoke")
    (tmp_path / "state").mkdir()
    subprocess.run([str(pulumi_bin), "stack", "init", "policy-smoke"], cwd=project, env=env, check=True,
                   capture_output=True, timeout=120)
    subprocess.run([str(pulumi_bin), "config", "set", "--secret", "--stack", "policy-smoke", "lakehouse:smokeSecret",
                    "smoke-config-value-1"], cwd=project, env=env, check=True, capture_output=True, timeout=120)
    done = subprocess.run([str(pulumi_bin), "preview", "--stack", "policy-smoke", "--policy-pack", str(pack_config.PACK_DIR),
                           "--non-interactive", "--color", "never"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0, output
    assert "lakehouse-contracts" in output
    assert ("native:LocalService 'rest-fixture' (layer catalog, owner platform) breaks catalog-no-in-memory-sqlite: "
            "CATALOG_URI=jdbc:sqlite::memory: is an in-memory SQLite database") in output
    assert ("native:LocalService 'rest-fixture' (layer catalog, owner platform) breaks secrets-not-plaintext: "
            "environment variable POSTGRES_PASSWORD holds a credential in plain text") in output
    # A secret (Output.secret) is not plain text: the pack keeps the engine's secret wrapper.
    assert "AWS_SECRET_ACCESS_KEY holds" not in output
    # A secret's value in plain text under another name, and the stack's secret config copied by value.
    head = "native:LocalService 'rest-fixture' (layer catalog, owner platform) breaks secret-values-not-plaintext: "
    assert (head + "env.STORE_AUTH holds the value of secret LAKEHOUSE_STORE_KEY of native:LocalService "
            "'rest-fixture' in plain text") in output
    assert (head + "env.COPY_OF_CONFIG holds the value of the stack's secret config lakehouse:smokeSecret in "
            "plain text") in output
    assert "smoke-store-secret-key" not in output and "smoke-config-value-1" not in output  # never printed
    # The stack config reached the pack: no "did not reach the policy pack" complaint.
    assert "did not reach the policy pack" not in output
    shutil.rmtree(tmp_path / "state", ignore_errors=True)


@pytest.mark.toolchain
def test_real_preview_of_the_native_stack_passes_and_a_changed_table_is_refused(tmp_path, request):
    """`pulumi preview --policy-pack lakehouse_platform/policies` on the project itself (native: no provider plugin needed).

    On its own block of ports (lakehouse_platform.control.isolated), so a user's `make up` platform running on this
    host does not stop the program; needs the CLI and the artifact cache (`make bootstrap`).
    """
    pulumi_bin = chosen_pulumi()
    from lakehouse_platform.config import load_platform as load
    from lakehouse_platform.control.isolated import isolated_platform

    platform, _ = isolated_platform("preview")
    config_file = tmp_path / "Pulumi.policy-check.yaml"
    config_file.write_text(yaml.safe_dump({"config": {"lakehouse:platform": platform}}))
    env = isolated_pulumi_env(tmp_path, "policy-check")
    (tmp_path / "state").mkdir()
    # `stack init` writes the stack's encryption salt into Pulumi.policy-check.yaml at the project root.
    request.addfinalizer(lambda: (REPO_ROOT / "Pulumi.policy-check.yaml").unlink(missing_ok=True))
    subprocess.run([str(pulumi_bin), "stack", "init", "policy-check"], cwd=REPO_ROOT, env=env, check=True,
                   capture_output=True, timeout=120)

    def preview(*extra: str) -> tuple[int, str]:
        done = subprocess.run([str(pulumi_bin), "preview", "--stack", "policy-check", "--config-file", str(config_file),
                               "--policy-pack", str(pack_config.PACK_DIR), "--non-interactive", "--color", "never",
                               *extra], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
        return done.returncode, " ".join((done.stdout + done.stderr).split())

    code, output = preview()
    assert code == 0 and "✅ lakehouse-contracts" in output, output
    assert "pulumi-python:dynamic/native:LocalService rest-fixture create" in output

    # The same resources against an ownership table that hands the catalog to another team.
    changed = copy.deepcopy(stack_platform("native"))
    changed.setdefault("layers", {})["catalog"] = {"owner": "catalog team"}
    policy_config = {name: {"enforcementLevel": level,
                            "context": pack_config.stack_context(load(changed), "native")}
                     for name, level in pack_config.levels_for("native").items()}
    (tmp_path / "policy.json").write_text(json.dumps(policy_config))
    code, output = preview("--policy-pack-config", str(tmp_path / "policy.json"))
    assert code != 0, output
    assert ("native:LocalService 'postgres' (layer catalog, owner platform) breaks layer-ownership: label "
            "lakehouse.owner='platform' but the ownership table of stack native says service postgres is owned by "
            "'catalog team'") in output
