"""Change review by owner: example diffs of the real stack files, each naming its layers, owners and approvers, and
the exit code CD gates on. Every stack file here is a real one with a key edited; nothing is mocked."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.control.isolated import FIXTURES
from lakehouse_platform.model import IdentitySpec, Layer
from lakehouse_platform.review import ownership as command
from lakehouse_platform.review.change import EXIT_APPROVALS_MISSING, EXIT_APPROVED, EXIT_BAD_INPUT
from lakehouse_platform.review.change.keys import ALL_LAYERS, key_layers
from tests.support import REPO_ROOT
from tests.support.stacks import spec_of, stack_platform

HERE = Path(__file__).resolve().parent
PREVIEW = HERE / "data" / "preview.json"


def write_stack(directory: Path, stack: str, platform: dict[str, Any], name: str | None = None) -> Path:
    """``Pulumi.<name>.yaml`` holding the stack file's other config and ``platform``."""
    document = yaml.safe_load((FIXTURES / f"Pulumi.{stack}.yaml").read_text())
    document["config"]["lakehouse:platform"] = platform
    path = directory / f"Pulumi.{name or stack}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def review(*args: str) -> tuple[int, dict[str, Any]]:
    """The change review in this interpreter, as JSON: (exit code, report)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command.main([*args, "--format", "json", "--root", str(FIXTURES)])
    assert code != EXIT_BAD_INPUT, err.getvalue()
    return code, json.loads(out.getvalue())


def changes_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["what"]: c for c in report["changes"]}


def head_with(tmp_path: Path, stack: str, edit: Any) -> Path:
    platform = stack_platform(stack)
    edit(platform)
    return write_stack(tmp_path, stack, platform)


# -- the four example diffs --------------------------------------------------------------------------------------


def test_a_memory_change_is_the_engines_teams_and_restarts_only_that_engine(tmp_path):
    head = head_with(tmp_path, "cloud", lambda p: p.setdefault("services", {}).setdefault("trino", {}).update(
        memory="12GiB"))
    code, report = review("--base", "Pulumi.cloud.yaml", "--head", str(head))
    change = changes_of(report)["services.trino.memory"]
    trino_owner = spec_of("cloud").owner_of("trino")
    assert (change["change"], change["layers"], change["owners"]) == ("2GiB -> 12GiB", ["compute"], [trino_owner])
    assert change["change_control"] == ["engine upgrades certified against the platform's tables before rollout"]
    assert change["effect"] == "restart" and change["does"].startswith("restart: trino is redeployed")
    assert change["down_while"] == "while trino restarts: that engine's users are down; every other engine is fine"
    assert change["approvers"] == [trino_owner] and len(report["changes"]) == 1
    assert code == EXIT_APPROVALS_MISSING and report["missing"] == [trino_owner]
    code, report = review("--base", "Pulumi.cloud.yaml", "--head", str(head), "--approved-by", trino_owner)
    assert code == EXIT_APPROVED and report["missing"] == []
    code, _ = review("--base", "Pulumi.cloud.yaml", "--head", str(head), "--approved-by", "platform")
    assert code == EXIT_APPROVALS_MISSING  # the platform does not approve an engine team's change


def _narrow_the_reader(platform: dict[str, Any]) -> str:
    """A governance change on the reader identity: its grants where the model has them, else its store actions."""
    reader = platform.setdefault("identities", {}).setdefault("reader", {})
    if "grants" in IdentitySpec.model_fields:
        # The reader is also the exporter, which reads every namespace: its grants spelled out, read on '*' only.
        reader["grants"] = {"*": ["read"]}
        return "identities.reader.grants"
    reader["actions"] = ["Read"]
    return "identities.reader.actions"


def test_a_grant_change_needs_security_and_platform_both(tmp_path):
    platform = stack_platform("lab")
    key = _narrow_the_reader(platform)
    head = write_stack(tmp_path, "lab", platform)
    code, report = review("--base", "Pulumi.lab.yaml", "--head", str(head), "--approved-by", "platform")
    changed = [c for c in report["changes"] if c["what"].startswith(key)]
    assert changed, report["changes"]
    for change in changed:
        assert change["layers"] == ["governance"] and change["owners"] == ["security, executed by platform"]
        assert change["change_control"] == ["policy changes reviewed by both"]
        assert change["approvers"] == ["security", "platform"] and change["missing"] == ["security"]
        assert "reads fail closed or, worse, fail open" in change["down_while"]
        assert change["does"].startswith("every enforcement point takes the new rights")
    assert code == EXIT_APPROVALS_MISSING and report["missing"] == ["security"]
    code, report = review("--base", "Pulumi.lab.yaml", "--head", str(head), "--approved-by", "security,platform")
    assert code == EXIT_APPROVED and report["required"] == ["security", "platform"]


def test_a_pin_bump_is_an_upgrade_on_the_services_data_approved_by_its_layers_owner(tmp_path):
    def bump(platform: dict[str, Any]) -> None:
        postgres = platform.setdefault("services", {}).setdefault("postgres", {})
        postgres.update(version="18.7", image="postgres:18.7")

    head = head_with(tmp_path, "lab", bump)
    code, report = review("--base", "Pulumi.lab.yaml", "--head", str(head))
    found = changes_of(report)
    assert set(found) == {"services.postgres.version", "services.postgres.image"}
    version = found["services.postgres.version"]
    assert (version["change"], version["layers"], version["owners"], version["approvers"]) == (
        "18.6 -> 18.7", ["catalog"], ["platform"], ["platform"])
    assert version["effect"] == "upgrade" and "postgres restarts on the new version, on its data" in version["does"]
    assert version["down_while"].startswith("while postgres restarts: no engine can find or commit to any table")
    assert code == EXIT_APPROVALS_MISSING
    assert review("--base", "Pulumi.lab.yaml", "--head", str(head), "--approved-by", "platform")[0] == EXIT_APPROVED


def test_a_catalog_switch_is_the_catalog_layers_and_says_what_the_engines_lose(tmp_path):
    head = head_with(tmp_path, "lab", lambda p: p.setdefault("catalog", {}).update(default="polaris"))
    code, report = review("--base", "Pulumi.lab.yaml", "--head", str(head), "--approved-by", "platform")
    change = changes_of(report)["catalog.default"]
    assert (change["change"], change["layers"], change["owners"], change["approvers"]) == (
        "rest-fixture -> polaris", ["catalog"], ["platform"], ["platform"])
    assert "tables registered only in the old catalog are not found through the new one" in change["does"]
    assert code == EXIT_APPROVED


# -- approvals as data ------------------------------------------------------------------------------------------


def test_the_base_rules_apply_a_change_cannot_drop_its_own_approver(tmp_path):
    platform = stack_platform("lab")
    key = _narrow_the_reader(platform)
    platform.setdefault("layers", {}).setdefault("governance", {})["approvers"] = ["platform"]
    head = write_stack(tmp_path, "lab", platform)
    code, report = review("--base", "Pulumi.lab.yaml", "--head", str(head), "--approved-by", "platform")
    assert changes_of(report)["layers.governance.approvers"]["approvers"] == ["security", "platform"]
    assert any(c["what"].startswith(key) and c["missing"] == ["security"] for c in report["changes"])
    assert code == EXIT_APPROVALS_MISSING
    # Adding an approver is stricter, so the head's rules count too.
    platform["layers"]["governance"]["approvers"] = ["security", "platform", "audit"]
    head = write_stack(tmp_path, "lab", platform)
    code, report = review("--base", "Pulumi.lab.yaml", "--head", str(head), "--approved-by", "security,platform")
    assert code == EXIT_APPROVALS_MISSING and report["missing"] == ["audit"]


def test_a_declared_tables_change_needs_its_owner_and_the_platforms_schedule(tmp_path):
    def retime(platform: dict[str, Any]) -> None:
        platform["tables"][0]["freshness_minutes"] = 60

    head = head_with(tmp_path, "native", retime)
    _, report = review("--base", "Pulumi.native.yaml", "--head", str(head))
    table = spec_of("native").tables[0]
    change = changes_of(report)[f"tables.{table.namespace}.{table.name}.freshness_minutes"]
    assert change["layers"] == ["orchestration"] and change["owners"] == [table.owner]
    assert change["approvers"] == [table.owner, "platform"]


def test_layers_approvers_are_validated_with_the_key_named():
    platform = stack_platform("lab")
    platform.setdefault("layers", {})["governance"] = {"approvers": ["security", "security"]}
    with pytest.raises(ConfigError, match=r"lakehouse:platform\.layers\.governance\.approvers: .*security listed "
                                          "twice"):
        load_platform(platform)
    platform["layers"]["governance"] = {"approvers": []}
    with pytest.raises(ConfigError, match=r"lakehouse:platform\.layers\.governance\.approvers: "):
        load_platform(platform)
    platform["layers"]["governance"] = {}
    platform["review"] = {"handles": {"security": "security-team"}}
    with pytest.raises(ConfigError, match=r"lakehouse:platform\.review\.handles: security: 'security-team' is not "
                                          "a handle; use @org/team, @user or an e-mail address"):
        load_platform(platform)


# -- which layer a key belongs to: from the models -------------------------------------------------------------


@pytest.mark.parametrize("stack", ["lab", "native", "cloud"])
def test_every_key_of_every_stack_has_its_layer_from_the_model(stack):
    spec = spec_of(stack)
    layers = key_layers(spec)
    every = {key for key, found in layers.items() if found == ALL_LAYERS}
    # Only what shapes every layer at once: where it deploys, the names, where its data lives on the host, the
    # cloud's network, the lab's images and published ports, and whether probes may disturb the stack (every
    # layer's owner says so: ADR 0017).
    assert every == {"target", "name", "state_dir", "aws.region", "aws.vpc_cidr", "aws.availability_zones",
                     "lab.images", "lab.base_image", "lab.published_port_offset", "disposable"}
    for key, found in layers.items():
        section = key.split(".")[0]
        if section == "services":
            assert found == {spec.services[key.split(".")[1]].layer}, key
        elif section == "layers":
            assert found == {Layer(key.split(".")[1])}, key
        else:
            expected = {"storage": Layer.STORAGE, "catalog": Layer.CATALOG, "identities": Layer.GOVERNANCE,
                        "governance": Layer.GOVERNANCE, "engines": Layer.COMPUTE, "flink": Layer.COMPUTE,
                        "streams": Layer.COMPUTE, "maintenance": Layer.ORCHESTRATION, "tables": Layer.ORCHESTRATION,
                        "recovery": Layer.RECOVERY, "observability": Layer.OBSERVABILITY}.get(section)
            if expected is not None:
                assert found == {expected}, key
    assert layers["aws.trino_workers"] == {Layer.COMPUTE} and layers["aws.rds_instance_class"] == {Layer.CATALOG}
    assert layers["aws.replica_region"] == {Layer.RECOVERY}


# -- sources: files and git revisions --------------------------------------------------------------------------


def test_the_base_is_read_from_git_and_a_stack_new_in_the_change_needs_every_layer(tmp_path):
    head = head_with(tmp_path, "lab", lambda p: p.setdefault("catalog", {}).update(default="polaris"))
    _, from_git = review("--base", "HEAD:Pulumi.lab.yaml", "--head", str(head))
    committed = tmp_path / "committed" / "Pulumi.lab.yaml"  # the same revision as a file (the tree may differ)
    committed.parent.mkdir()
    committed.write_bytes(subprocess.run(["git", "show", "HEAD:./Pulumi.lab.yaml"], cwd=FIXTURES, check=True,
                                         capture_output=True).stdout)
    _, from_file = review("--base", str(committed), "--head", str(head))
    assert from_git["changes"] == from_file["changes"] and from_git["base"] == "HEAD:Pulumi.lab.yaml"
    new = write_stack(tmp_path, "lab", stack_platform("lab"), name="staging")
    code, report = review("--base", "HEAD:Pulumi.staging.yaml", "--head", str(new), "--approved-by", "platform")
    (change,) = report["changes"]
    assert change["what"] == "stack" and change["layers"] == [layer.value for layer in Layer]
    spec = spec_of("lab")  # every layer's approvers; 'owner': each layer's owner and its services' owners
    assert {"platform", "security", "data engineering", spec.owner_of("trino")} <= set(report["required"])
    expected = set()
    for layer, contract in spec.layers.items():
        for approver in contract.approvers:
            expected |= ({contract.owner, *(spec.owner_of(n) for n in spec.services_of(layer))} if approver == "owner"
                         else {approver})
    assert set(report["required"]) == expected
    assert code == EXIT_APPROVALS_MISSING


def test_bad_input_exits_2_naming_it_without_a_traceback(tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    broken = head_with(tmp_path, "lab", lambda p: p.update(layers={"compute": {"owner": ""}}))
    cases = [(["--base", "no-such-rev-xyz:Pulumi.lab.yaml", "--stack", "lab"], "'no-such-rev-xyz' is not a revision"),
             (["--base", "nowhere.yaml", "--stack", "lab"], "nowhere.yaml: no such file"),
             (["--preview", str(tmp_path / "broken.json"), "--stack", "lab"], "broken.json: not JSON")]
    for args, message in cases:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            assert command.main([*args, "--root", str(FIXTURES)]) == EXIT_BAD_INPUT, args
        assert message in err.getvalue(), err.getvalue()
    # As a user runs it, in its own process: the config's error, no traceback.
    done = subprocess.run([sys.executable, "-m", "lakehouse_platform", "-C", str(REPO_ROOT), "review", "--base",
                           "Pulumi.lab.yaml", "--head", str(broken), "--root", str(FIXTURES)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == EXIT_BAD_INPUT, (done.stdout, done.stderr)
    assert "layers.compute.owner: every layer needs an owner" in done.stderr and "Traceback" not in done.stderr


# -- a pulumi preview --json -------------------------------------------------------------------------------------


def test_a_preview_names_each_resource_it_changes_with_its_layer_owner_and_approvers():
    """data/preview.json: the CLI's own output for the toy graph (tests/review/change/toy.py, test_toy_preview)."""
    code, report = review("--stack", "native", "--preview", str(PREVIEW), "--approved-by", "platform")
    found = changes_of(report)
    assert set(found) == {"native:LocalService 'trino'", "native:LocalService 'postgres'",
                          "native:LocalService 'catalog-gate'", "native:LocalService 'spark'"}
    trino, postgres = found["native:LocalService 'trino'"], found["native:LocalService 'postgres'"]
    assert (trino["change"], trino["layers"], trino["owners"], trino["effect"]) == (
        "update", ["compute"], ["analytics engineering"], "restart")
    assert (postgres["change"], postgres["layers"], postgres["effect"]) == ("replace", ["catalog"], "replace")
    assert postgres["does"].startswith("replace (data_dir): deleted and created again")
    gate = found["native:LocalService 'catalog-gate'"]
    assert (gate["change"], gate["layers"], gate["approvers"], gate["missing"]) == (
        "delete", ["governance"], ["security", "platform"], ["security"])
    assert found["native:LocalService 'spark'"]["down_while"] == "nothing is down"
    assert code == EXIT_APPROVALS_MISSING and report["missing"] == ["analytics engineering", "security"]


def test_a_preview_and_a_config_diff_are_reviewed_together(tmp_path):
    head = head_with(tmp_path, "native", lambda p: p.setdefault("catalog", {}).update(spark_cache_enabled=False))
    code, report = review("--base", "Pulumi.native.yaml", "--head", str(head), "--preview", str(PREVIEW),
                          "--approved-by", "platform,security,analytics engineering")
    assert {c["source"] for c in report["changes"]} == {"config", "resource"}
    assert code == EXIT_APPROVED


def test_a_replacements_halves_are_one_replace_and_unchanged_steps_are_left_out():
    from lakehouse_platform.review.change.preview import resource_changes

    step = next(s for s in json.loads(PREVIEW.read_text())["steps"] if s["op"] == "replace")
    for ops in (("create-replacement", "replace", "delete-replaced"), ("create-replacement", "delete-replaced")):
        halves = [{**step, "op": op} for op in ops]
        unchanged = [{**step, "op": op, "urn": step["urn"] + op} for op in ("same", "read", "refresh")]
        (change,) = resource_changes([*halves, *unchanged], spec_of("native"), "native")
        assert (change.op, change.reasons) == ("replace", ("data_dir",))


def test_a_replaced_resource_that_holds_data_is_said_to_start_empty():
    preview = json.loads(PREVIEW.read_text())
    step = next(s for s in preview["steps"] if s["op"] == "replace")
    for state in (step.get("newState"), step.get("oldState")):
        if state:
            state["type"] = "docker:index/volume:Volume"
    step["urn"] = step["urn"].replace("pulumi-python:dynamic/native:LocalService", "docker:index/volume:Volume")
    from lakehouse_platform.review.change.effects import resource_effect
    from lakehouse_platform.review.change.preview import resource_changes

    spec = spec_of("lab")
    (change,) = [c for c in resource_changes(preview["steps"], spec, "lab") if c.op == "replace"]
    effect = resource_effect(change, spec)
    assert "EMPTY: its data is lost unless it is kept elsewhere" in effect.does


# -- the terminal, markdown and CODEOWNERS ---------------------------------------------------------------------


def _lines(args: list[str], columns: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The review's output at a terminal width (rich reads COLUMNS), in this interpreter."""
    monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command.main([*args, "--root", str(FIXTURES)]) in (EXIT_APPROVED, EXIT_APPROVALS_MISSING)
    return out.getvalue().splitlines()


def test_the_ownership_review_fits_a_terminal_of_110_columns_and_says_everything(monkeypatch):
    # As the issue runs it: COLUMNS=110 lakehouse review --stack cloud, in its own process.
    env = {k: v for k, v in __import__("os").environ.items() if k != "LINES"}
    done = subprocess.run([sys.executable, "-m", "lakehouse_platform", "review", "--stack", "cloud", "--root",
                           str(FIXTURES)], cwd=REPO_ROOT,
                          env={**env, "COLUMNS": "110"}, capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 110
    assert not any(line.endswith(" ") for line in lines)
    text = " ".join(" ".join(line.split()) for line in lines)
    spec = spec_of("cloud")
    for contract in spec.layers.values():
        for sentence in (contract.change_control, contract.promise, contract.down_means, contract.owner):
            assert sentence in text, sentence
    wide = _lines(["--stack", "cloud"], 200, monkeypatch)
    assert any("┃ Layer" in line for line in wide) and max(len(line) for line in wide) <= 200


def test_the_change_review_fits_110_columns_and_its_markdown_is_a_table(tmp_path, monkeypatch):
    # A catalog switch on the lab (the cloud has one catalog it may run: Lakekeeper is refused there, ADR 0013).
    head = head_with(tmp_path, "lab", lambda p: p.setdefault("catalog", {}).update(default="polaris"))
    lines = _lines(["--base", "Pulumi.lab.yaml", "--head", str(head), "--preview", str(PREVIEW)], 110, monkeypatch)
    assert max(len(line) for line in lines) <= 110 and not any(line.endswith(" ") for line in lines)
    assert "* catalog.default  rest-fixture -> polaris" in lines  # a block per change, not a folded table
    assert "  layer catalog; owner platform" in lines
    assert lines[-1].startswith("NOT APPROVED: missing ") and lines[-1].endswith(f"exit {EXIT_APPROVALS_MISSING}")
    markdown = "\n".join(_lines(["--base", "Pulumi.lab.yaml", "--head", str(head), "--format", "markdown",
                                 "--approved-by", "platform"], 80, monkeypatch))
    assert "| What | Change | Layer | Owner | Change control | Does | Down while it happens | Approvers |" in markdown
    assert "| `catalog.default` | rest-fixture -> polaris | catalog | platform |" in markdown
    assert "- ✅ platform" in markdown and "**APPROVED: every change has its approvers (platform)**" in markdown


def test_codeowners_lists_each_stack_files_approving_teams_by_handle(tmp_path):
    platform = stack_platform("cloud")
    platform["review"] = {"handles": {"platform": "@acme/platform", "security": "@acme/security",
                                      "analytics engineering": "@acme/analytics"}}
    write_stack(tmp_path, "cloud", platform)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command.main(["--codeowners", "--root", str(tmp_path)]) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("# BEGIN lakehouse-platform change review") and lines[-1].startswith("# END")
    assert "/Pulumi.cloud.yaml @acme/platform @acme/analytics @acme/security" in lines
    unnamed = next(line for line in lines if line.startswith("# /Pulumi.cloud.yaml: no handle for"))
    assert "each engine's team" in unnamed and "data engineering" in unnamed


def test_the_teams_handles_are_printed_for_cd():
    platform = copy.deepcopy(stack_platform("lab"))
    assert load_platform(platform).review.handles == {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command.main(["--stack", "lab", "--handles", "--root", str(FIXTURES)]) == 0
    assert json.loads(out.getvalue()) == {}
