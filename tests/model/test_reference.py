"""lakehouse_platform.reference: the configuration reference and the services table the docs site renders.

The docs build fills its configuration pages from these at every build; these tests pin that every key of
the stack config is there with its default and bounds, and that a field without a description is refused.
"""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel, Field

from lakehouse_platform import reference
from lakehouse_platform.model import PlatformSpec, RestartSpec, Strict, Target
from lakehouse_platform.services.registry import registry


def _rows(markdown: str) -> dict[str, dict[str, list[str]]]:
    """section path -> key -> its cells (type, default, allowed, description)."""
    found: dict[str, dict[str, list[str]]] = {}
    section = ""
    for line in markdown.splitlines():
        heading = re.match(r"^## `([^`]+)` \{#", line)
        if heading:
            section = heading.group(1)
            found[section] = {}
        elif line.startswith("| `") and section:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            found[section][cells[0].strip("`")] = cells[1:]
    return found


def test_every_key_of_every_model_is_a_row_of_its_section():
    rows = _rows(reference.spec_reference())
    for section in reference.sections():
        title = "lakehouse:platform" if not section.path else section.path
        assert title in rows, f"no section for {title}"
        assert list(rows[title]) == list(section.model.model_fields), title
    # the nested maps, lists and the discriminated union of connectors all have their sections
    assert {"services.<service>.health", "services.<service>.ports.<port>", "layers.<layer>", "tables[].columns[]",
            "streams.connectors[] (kind: debezium-postgres)", "streams.connectors[] (kind: iceberg-sink)"} <= set(rows)


def test_rows_carry_the_models_defaults_allowed_values_and_bounds():
    rows = _rows(reference.spec_reference())
    target = rows["lakehouse:platform"]["target"]
    assert target[1] == "required"
    assert target[2] == "`docker`, `aws`, `native`"
    restart = rows["services.<service>.restart"]
    assert restart["max_restarts"][1] == f"`{RestartSpec().max_restarts}`"
    assert restart["max_restarts"][2] == "≥ 0, ≤ 100"
    assert restart["max_restarts"][3] == RestartSpec.model_fields["max_restarts"].description
    port = rows["services.<service>.ports.<port>"]["internal"]
    assert port[2] == "≥ 1, ≤ 65535"
    assert rows["aws"]["msk_instance_type"][2] == r"matches `^kafka\.[a-z0-9]+\.[a-z0-9]+$`"
    # a nested section's default links to the section holding its own defaults
    assert rows["lakehouse:platform"]["recovery"][1] == "[its defaults](#cfg-recovery)"


def test_every_link_points_at_a_section_of_the_page():
    markdown = reference.spec_reference()
    anchors = set(re.findall(r"\{#([a-z0-9-]+)\}", markdown))
    links = set(re.findall(r"\]\(#([a-z0-9-]+)\)", markdown))
    assert links and links <= anchors


def test_long_defaults_are_shown_as_yaml_under_the_table():
    markdown = reference.spec_reference()
    section = markdown.split("## `streams` {#cfg-streams}")[1].split("\n## ")[0]
    assert "| `connectors` |" in section and "| below |" in section
    assert "Default of `connectors`:\n\n```yaml\nconnectors:\n- name: bookshop-cdc" in section


def test_a_field_without_a_description_is_refused_naming_it():
    class Undocumented(Strict):
        """A model with one undocumented field."""

        size: int = Field(default=1, description="Documented.")
        colour: str = "red"

    class Root(BaseModel):
        """The root."""

        inner: Undocumented = Field(default_factory=Undocumented, description="Holds it.")

    with pytest.raises(reference.UndocumentedField, match=r"Undocumented\.colour has no description"):
        reference.spec_reference(Root)


def test_the_platform_spec_has_no_undocumented_field():
    reference.spec_reference(PlatformSpec)  # raises UndocumentedField naming the first one


def test_services_table_lists_every_service_and_why_a_target_cannot_run_it():
    markdown = reference.services_reference()
    for definition in registry():
        assert f"| `{definition.name}` |" in markdown
        for target in Target:
            if (why := definition.unavailable_on(target)) is not None:
                assert f"| `{definition.name}` | {target.value} | {reference._cell(why)} |" in markdown
    trino = next(line for line in markdown.splitlines() if line.startswith("| `trino` | compute"))
    assert "483, native 476" in trino and "| container | local process | ECS Fargate |" in trino
    postgres = next(line for line in markdown.splitlines() if line.startswith("| `postgres` | catalog"))
    assert "managed: RDS PostgreSQL" in postgres
