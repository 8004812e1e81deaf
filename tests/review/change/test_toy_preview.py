"""The change review on a preview the Pulumi CLI prints for real (toolchain tier: needs a CLI, deploys only the toy)."""

from __future__ import annotations

import json

import pytest

from lakehouse_platform.control import toolchain
from lakehouse_platform.review.change.approvals import review
from lakehouse_platform.review.change.preview import read_preview, resource_changes
from tests.review.change.toy import FIXTURE, run_toy, strip
from tests.support.stacks import spec_of


@pytest.mark.toolchain
def test_the_review_reads_the_clis_own_preview_json_and_the_unit_tiers_copy_is_that_output(tmp_path):
    tool = toolchain.current()
    if tool is None:
        pytest.skip("no Pulumi CLI: neither yours on PATH nor the project's build (make pulumi)")
    preview = run_toy(tmp_path, tool)
    ops = [(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in preview["steps"]]
    committed = json.loads(FIXTURE.read_text())
    # The committed copy is this output (python -m tests.review.change.toy rewrites it).
    assert sorted(ops) == sorted((s["op"], s["urn"].rsplit("::", 1)[-1]) for s in committed["steps"])
    assert strip(preview)["changeSummary"] == committed["changeSummary"]
    spec = spec_of("native")
    changes = resource_changes(read_preview(json.dumps(preview), "preview"), spec, "native")
    result = review("native", None, "Pulumi.native.yaml", None, spec, [], changes, ["platform"])
    by_name = {c.what: c for c in result.changes}
    assert by_name["native:LocalService 'postgres'"].effect.does.startswith("replace (data_dir)")
    assert by_name["native:LocalService 'catalog-gate'"].missing == ("security",)
    assert result.missing == ("analytics engineering", "security")
