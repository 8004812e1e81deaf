"""The ownership review command, on all three stack files and on broken ones."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lakehouse_platform.control.isolated import FIXTURES

ROOT = FIXTURES  # the tests' own stack files, never the examples a team edits


def review(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    """The review command run in this interpreter (its ``main``): exit code, stdout and stderr."""
    from lakehouse_platform.review.ownership import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--root", str(root)])
    return subprocess.CompletedProcess(["python", "-m", "lakehouse_platform", "review", *args], code, out.getvalue(), err.getvalue())


def review_process(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    """The review command as a user runs it: its own process."""
    return subprocess.run([sys.executable, "-m", "lakehouse_platform", "review", *args, "--root", str(root)],
                          cwd=root, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("stack,target", [("lab", "docker"), ("cloud", "aws"), ("native", "native")])
def test_review_json_of_each_stack(stack, target):
    result = review("--stack", stack, "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["target"] == target
    assert [row["layer"] for row in data["layers"]] == [
        "storage", "catalog", "compute", "governance", "orchestration", "observability", "recovery"]
    assert all(row["owner"] and row["promise"] and row["down_means"] and row["change_control"] for row in data["layers"])


def test_review_table_names_owners_and_pins():
    result = review("--stack", "lab")
    assert result.returncode == 0, result.stderr
    assert "security, executed by platform" in result.stdout
    assert "trino 483" in result.stdout and "rest-fixture 1.10.1" in result.stdout


def test_review_markdown_native_shows_only_its_services():
    result = review("--stack", "native", "--format", "markdown")
    assert result.returncode == 0
    assert "| storage | platform |" in result.stdout
    ownership = result.stdout.split("### Catalog access")[0]
    assert "polaris" not in ownership and "trino 476" in ownership  # native runs 476
    # Each catalog says how its clients authenticate here, or why it does not run here.
    assert "- rest-fixture: through catalog-gate: each identity with its own bearer token" in result.stdout
    assert "- polaris: not on native: no registry serves Polaris's server" in result.stdout


def test_review_says_lakekeeper_is_refused_and_polaris_has_a_principal_per_identity():
    result = review("--stack", "cloud")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "lakekeeper: not on aws: refused until it enforces the stack's grants" in text
    assert "polaris: each identity is its own principal" in text and "root credential only in polaris-bootstrap" in text


def test_review_diff_lab_cloud():
    result = review("--stack", "lab", "--diff", "cloud", "--format", "json")
    assert result.returncode == 0, result.stderr
    changes = {c["what"]: (c["left"], c["right"]) for c in json.loads(result.stdout)["changes"]}
    assert changes["target"] == ("docker", "aws")
    assert changes["services.rest-fixture"] == ("enabled", "disabled")
    assert "services.trino" not in changes


def test_review_of_invalid_stack_exits_nonzero_without_traceback(tmp_path):
    shutil.copy(ROOT / "Pulumi.lab.yaml", tmp_path / "Pulumi.broken.yaml")
    text = (tmp_path / "Pulumi.broken.yaml").read_text().replace("owner: each engine's team", "owner: ''")
    (tmp_path / "Pulumi.broken.yaml").write_text(text)
    result = review_process("--stack", "broken", root=tmp_path)  # a real process: exit code, no traceback
    assert result.returncode == 2
    assert "lakehouse:platform.layers.compute.owner: every layer needs an owner" in result.stderr
    assert "Traceback" not in result.stderr


def test_review_of_missing_stack(tmp_path):
    result = review("--stack", "nope", root=tmp_path)
    assert result.returncode == 2 and "Pulumi.nope.yaml: no such stack file" in result.stderr


def test_review_shows_the_declared_tables_with_their_owners_freshness_and_maintenance(capsys, monkeypatch):
    from lakehouse_platform.review import ownership as command

    monkeypatch.setenv("COLUMNS", "200")  # the table layout: one row per table
    assert command.main(["--stack", "native", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert "Declared tables: stack native" in out
    row = next(line for line in out.splitlines() if "shop.orders" in line)
    assert "bookshop data engineering" in row and "1440 min" in row and "expire_snapshots */15 * * * *" in row
    assert "day(order_ts)" in row
    assert "recovery point objective 60 min, recovery time objective 120 min" in out
    assert command.main(["--stack", "native", "--format", "json", "--root", str(ROOT)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(t["table"], t["owner"], t["freshness_minutes"]) for t in data["tables"]] == [
        ("shop.orders", "bookshop data engineering", 1440), ("shop.customers", "bookshop data engineering", 1440)]
    assert data["recovery"]["rto_minutes"] == 120


def test_review_diff_shows_a_table_whose_owner_changed(tmp_path, capsys):
    import yaml

    from lakehouse_platform.review import ownership as command

    shutil.copy(ROOT / "Pulumi.native.yaml", tmp_path / "Pulumi.native.yaml")
    other = yaml.safe_load((ROOT / "Pulumi.native.yaml").read_text())
    other["config"]["lakehouse:platform"]["tables"][0]["owner"] = "sales analytics"
    (tmp_path / "Pulumi.other.yaml").write_text(yaml.safe_dump(other))
    assert command.main(["--stack", "native", "--diff", "other", "--format", "json", "--root", str(tmp_path)]) == 0
    changes = {c["what"]: (c["left"], c["right"]) for c in json.loads(capsys.readouterr().out)["changes"]}
    assert changes == {"tables.shop.orders.owner": ("bookshop data engineering", "sales analytics")}


def test_review_prints_who_may_read_write_and_manage_each_namespace_and_what_to_read_twice(tmp_path, capsys):
    import yaml

    from lakehouse_platform.review import ownership as command

    assert command.main(["--stack", "native", "--format", "json", "--root", str(ROOT)]) == 0
    data = json.loads(capsys.readouterr().out)
    everyone, writers = ["platform", "writer", "reader"], ["platform", "writer"]
    assert data["grants"] == [
        {"namespace": "shop", "read": everyone, "write": writers, "manage": writers},
        {"namespace": "* (any other)", "read": everyone, "write": writers, "manage": writers}]
    # The writer acts for the tables' owner (identities.writer.team); what natively stays trusted is said plainly.
    assert [f for f in data["flags"] if "trusts every local process" not in f] == []
    assert any("trusts every local process" in f for f in data["flags"])
    stack = yaml.safe_load((ROOT / "Pulumi.native.yaml").read_text())
    platform = stack["config"]["lakehouse:platform"]
    platform["identities"] = {"wide": {"access_key": "wide-access-key", "actions": ["Read", "Write", "List"],
                                       "secret_config_key": "s3WideSecretKey",
                                       "grants": {"*": ["read", "write"], "shop": ["read"]}}}
    (tmp_path / "Pulumi.teams.yaml").write_text(yaml.safe_dump(stack))
    assert command.main(["--stack", "teams", "--format", "markdown", "--root", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "| shop | platform, writer, reader, wide | platform, writer | platform, writer |" in text
    assert "- table shop.orders: its owner 'bookshop data engineering' has no identity that may write shop" in text
    assert "- identity wide: the lab store cannot narrow '*' for shop: its store keys may still write there" in text


def test_review_diff_shows_a_grant_that_changed(tmp_path, capsys):
    import yaml

    from lakehouse_platform.review import ownership as command

    shutil.copy(ROOT / "Pulumi.native.yaml", tmp_path / "Pulumi.native.yaml")
    other = yaml.safe_load((ROOT / "Pulumi.native.yaml").read_text())
    other["config"]["lakehouse:platform"]["identities"]["writer"]["grants"] = {
        "*": ["read", "write", "manage"], "shop": ["read", "write"]}
    (tmp_path / "Pulumi.other.yaml").write_text(yaml.safe_dump(other))
    assert command.main(["--stack", "native", "--diff", "other", "--format", "json", "--root", str(tmp_path)]) == 0
    changes = {c["what"]: (c["left"], c["right"]) for c in json.loads(capsys.readouterr().out)["changes"]}
    assert changes == {"grants.writer.shop": ("read, write, manage", "read, write")}
