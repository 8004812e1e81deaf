"""The change review shows the rights it asks approval for: per identity and namespace the actions before and after,
per namespace who gains and who loses, in the table, the markdown and the JSON alike, never cut; a widening needs
security, a narrowing the team that loses the right (``review.rights``). Real stack files with a key edited."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.review import ownership as command
from lakehouse_platform.review.change import EXIT_APPROVALS_MISSING, EXIT_APPROVED
from tests.review.change.test_change_review import changes_of, head_with, review
from tests.support.stacks import stack_platform

ETL = {"access_key": "etl-access-key", "actions": ["Read", "Write", "List"], "secret_config_key": "s3EtlSecretKey",
       "team": "finance analytics", "grants": {"finance": ["read", "write", "manage"], "shop": ["read"]}}


def _add_etl(platform: dict[str, Any]) -> None:
    platform.setdefault("governance", {}).setdefault("namespaces", []).append("finance")
    platform.setdefault("identities", {})["etl"] = ETL


def _narrow_etl(platform: dict[str, Any]) -> None:
    # etl keeps reading finance, where it wrote and managed tables.
    _add_etl(platform)
    platform["identities"]["etl"] = {**ETL, "grants": {"finance": ["read"], "shop": ["read"]},
                                     "actions": ["Read", "List"]}


def _with_etl(tmp_path: Path) -> Path:
    """The native stack with etl, as the base of a narrowing."""
    (tmp_path / "base").mkdir()
    return head_with(tmp_path / "base", "native", _add_etl)


def _text(*args: str, width: int = 200) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    with contextlib.redirect_stdout(out):
        original = command.Console
        command.Console = lambda: console  # type: ignore[assignment,misc]
        try:
            command.main(list(args))
        finally:
            command.Console = original  # type: ignore[misc]
    return out.getvalue()


def test_a_new_identity_is_a_widening_shown_per_namespace_and_needs_security(tmp_path):
    head = head_with(tmp_path, "native", _add_etl)
    code, report = review("--base", "Pulumi.native.yaml", "--head", str(head), "--approved-by", "platform")
    rights = report["rights"]
    assert rights["direction"] == "widening"
    assert rights["identities"] == [
        {"identity": "etl", "namespace": "shop", "before": None, "after": ["read"], "gained": ["read"], "lost": [],
         "direction": "widening"},
        {"identity": "etl", "namespace": "finance", "before": None, "after": ["read", "write", "manage"],
         "gained": ["read", "write", "manage"], "lost": [], "direction": "widening"}]
    assert rights["namespaces"] == {"shop": {"gains": {"read": ["etl"]}, "loses": {}},
                                    "finance": {"gains": {"read": ["etl"], "write": ["etl"], "manage": ["etl"]},
                                                "loses": {}}}
    change = changes_of(report)["rights of etl"]
    assert change["change"] == "shop: (no such identity) -> read; finance: (no such identity) -> read, write, manage"
    assert change["effect"] == "widening" and "security" in change["approvers"]
    assert code == EXIT_APPROVALS_MISSING and "security" in report["missing"]
    # The identity's own key: its whole value, the grants readable (never cut mid-structure), and as data in JSON.
    added = changes_of(report)["identities.etl"]
    assert "grants: {finance: [read, write, manage], shop: [read]}" in added["change"]
    assert "…" not in added["change"]
    assert added["before"] is None and added["after"]["grants"] == ETL["grants"]
    code, report = review("--base", "Pulumi.native.yaml", "--head", str(head), "--approved-by", "platform,security")
    assert code == EXIT_APPROVED, report["missing"]

    markdown = _text("--base", "Pulumi.native.yaml", "--head", str(head), "--format", "markdown")
    assert "### Rights per identity and namespace (widening)" in markdown
    assert "| etl | finance | (no such identity) | read, write, manage | widening |" in markdown
    assert "| finance | read: etl; write: etl; manage: etl | - |" in markdown
    table = _text("--base", "Pulumi.native.yaml", "--head", str(head))
    assert "Rights per identity and namespace (widening)" in table and "Who gains and who loses" in table
    row = next(line for line in table.splitlines() if "│ etl" in line and "finance" in line)
    assert "read, write, manage" in row and "widening" in row
    assert "…" not in table


def test_a_narrowing_shows_who_loses_and_needs_the_losing_team_not_only_security(tmp_path):
    base = _with_etl(tmp_path)
    head = head_with(tmp_path, "native", _narrow_etl)
    code, report = review("--base", str(base), "--head", str(head), "--approved-by", "security,platform")
    rights = report["rights"]
    assert rights["direction"] == "narrowing"
    assert rights["identities"] == [
        {"identity": "etl", "namespace": "finance", "before": ["read", "write", "manage"], "after": ["read"],
         "gained": [], "lost": ["write", "manage"], "direction": "narrowing"}]
    assert rights["namespaces"] == {"finance": {"gains": {}, "loses": {"write": ["etl"], "manage": ["etl"]}}}
    change = changes_of(report)["rights of etl"]
    assert change["effect"] == "narrowing" and change["change"] == "finance: read, write, manage -> read"
    assert "finance analytics" in change["approvers"]  # etl's team: its pipelines fail closed
    assert code == EXIT_APPROVALS_MISSING and report["missing"] == ["finance analytics"]
    code, _ = review("--base", str(base), "--head", str(head), "--approved-by", "security,platform,finance analytics")
    assert code == EXIT_APPROVED
    markdown = _text("--base", str(base), "--head", str(head), "--format", "markdown")
    assert "| etl | finance | read, write, manage | read | narrowing |" in markdown
    assert "| finance | - | write: etl; manage: etl |" in markdown


def test_a_change_that_widens_one_identity_and_narrows_another_needs_both_rules(tmp_path):
    def both(platform: dict[str, Any]) -> None:
        _narrow_etl(platform)  # etl narrowed, and a new auditor reads finance
        platform["identities"]["audit"] = {"access_key": "audit-access-key", "actions": ["Read", "List"],
                                           "secret_config_key": "s3AuditSecretKey", "grants": {"finance": ["read"]}}

    base = _with_etl(tmp_path)
    _, report = review("--base", str(base), "--head", str(head_with(tmp_path, "native", both)))
    assert report["rights"]["direction"] == "widening"
    assert changes_of(report)["rights of etl"]["effect"] == "narrowing"
    assert changes_of(report)["rights of audit"]["effect"] == "widening"
    assert {"security", "platform", "finance analytics"} <= set(report["required"])


def test_the_rights_rule_is_data_and_a_widening_cannot_leave_security_out():
    platform = stack_platform("native")
    platform["review"] = {"rights": {"widening": ["platform"]}}
    with pytest.raises(ConfigError, match=r"review\.rights\.widening.*security must approve"):
        load_platform(platform)
    platform["review"] = {"rights": {"narrowing": ["platform", "data stewards"]}}
    assert load_platform(platform).review.rights.narrowing == ["platform", "data stewards"]


def test_a_declared_table_added_is_shown_whole(tmp_path):
    table = {"namespace": "shop", "name": "returns", "owner": "bookshop data engineering", "freshness_minutes": 60,
             "columns": [{"name": "return_id", "type": "long", "required": True,
                          "doc": "a long description that would have been cut at sixty characters before"}]}
    head = head_with(tmp_path, "native", lambda p: p["tables"].append(table))
    _, report = review("--base", "Pulumi.native.yaml", "--head", str(head))
    added = changes_of(report)["tables.shop.returns"]
    assert "a long description that would have been cut at sixty characters before" in added["change"]
    assert added["after"]["columns"][0]["name"] == "return_id" and report["rights"]["identities"] == []
