"""Tables as code: create or evolve a declared table through the default catalog (PyIceberg).

``apply_table(catalog, declaration)`` makes the catalog's table match its declaration
(``lakehouse_platform.model.TableSpec.model_dump()``) and says what it did:

* missing: the namespace and the table are created with the declared schema, partition spec and
  properties (the owner, the freshness promise and the maintenance that applies are table
  properties too, so every engine and the exporter can read them from the table itself);
* present: the differences are applied as one evolution commit: new columns added, allowed type
  promotions (int -> long, float -> double, a wider decimal) applied, required -> optional relaxed,
  the partition spec evolved to the declared fields (old data keeps its old spec), changed
  properties set. A column the declaration no longer lists is kept and reported, never dropped;
  a change Iceberg cannot make in place (a narrowing type, optional -> required, a new required
  column) stops with a message naming the column and what is allowed, and nothing is committed.
  The table is never dropped or recreated.

Standard library and PyIceberg only, no import of the project: the operations image runs it, and the deployment's
dynamic provider (``lakehouse_platform.targets.declared_tables``) imports it in the provider process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OWNER_PROPERTY = "owner"
FRESHNESS_PROPERTY = "platform.freshness-minutes"
MAINTENANCE_PROPERTY = "platform.maintenance"
DECLARED_PROPERTY = "platform.declared"
# Iceberg properties Trino sets through a table property of its own, and refuses in extra_properties
# ("Illegal keys in extra_properties: [commit.retry.num-retries]", Trino 476).
TRINO_OWN_PROPERTIES = {"commit.retry.num-retries": "max_commit_retry"}
# The property keys the platform writes from a declaration's typed fields (Trino must be allowed to set them,
# beside each declaration's ``properties``: the platform's table properties and the table's own).
PROPERTY_KEYS = (OWNER_PROPERTY, FRESHNESS_PROPERTY, MAINTENANCE_PROPERTY, DECLARED_PROPERTY)


class TableEvolutionError(ValueError):
    """A declaration the existing table cannot be evolved to in place; nothing was committed."""


def iceberg_type(name: str) -> Any:
    """The PyIceberg type of a declared column type (``lakehouse_platform.model.tables.ColumnType``)."""
    from pyiceberg import types as t

    simple = {"boolean": t.BooleanType(), "int": t.IntegerType(), "long": t.LongType(), "float": t.FloatType(),
              "double": t.DoubleType(), "date": t.DateType(), "timestamp": t.TimestampType(),
              "timestamptz": t.TimestamptzType(), "string": t.StringType(), "uuid": t.UUIDType(),
              "binary": t.BinaryType()}
    if name in simple:
        return simple[name]
    if name.startswith("decimal(") and name.endswith(")"):
        precision, scale = (int(x) for x in name[len("decimal("):-1].split(","))
        return t.DecimalType(precision, scale)
    raise TableEvolutionError(f"unknown column type {name!r}")


def transform_text(part: Mapping[str, Any]) -> str:
    """``day``, ``bucket[16]``, ``truncate[4]``: a declared partition field's transform as Iceberg prints it."""
    transform = str(part.get("transform") or "identity")
    width = part.get("width")
    return f"{transform}[{int(width or 0)}]" if transform in ("bucket", "truncate") else transform


def partition_field_name(part: Mapping[str, Any]) -> str:
    """Iceberg's conventional name of a partition field (``order_ts_day``, ``customer_id_bucket``)."""
    transform = str(part.get("transform") or "identity")
    suffix = {"identity": "", "truncate": "_trunc"}.get(transform, f"_{transform}")
    return f"{part['source']}{suffix}"


def table_properties(declaration: Mapping[str, Any]) -> dict[str, str]:
    """Every property a declared table carries: its ``properties`` (the platform's table properties, which the
    deployment renders into them, and its own: ``PlatformSpec.declaration``), owner and promises."""
    return {
        **{str(k): str(v) for k, v in (declaration.get("properties") or {}).items()},
        OWNER_PROPERTY: str(declaration["owner"]),
        FRESHNESS_PROPERTY: str(int(declaration["freshness_minutes"])),
        MAINTENANCE_PROPERTY: ",".join(declaration.get("maintenance") or []),
        DECLARED_PROPERTY: "true",
    }


def identifier(declaration: Mapping[str, Any]) -> str:
    return f"{declaration['namespace']}.{declaration['name']}"


def _schema(declaration: Mapping[str, Any]) -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField

    return Schema(*[
        NestedField(index + 1, column["name"], iceberg_type(column["type"]), required=bool(column.get("required")),
                    doc=column.get("doc") or None)
        for index, column in enumerate(declaration["columns"])
    ])


def _partition_spec(declaration: Mapping[str, Any], schema: Any) -> Any:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import parse_transform

    fields = [
        PartitionField(source_id=schema.find_field(part["source"]).field_id, field_id=1000 + index,
                       transform=parse_transform(transform_text(part)), name=partition_field_name(part))
        for index, part in enumerate(declaration.get("partition_by") or [])
    ]
    return PartitionSpec(*fields)


def _promotion_allowed(current: Any, wanted: Any) -> bool:
    """Iceberg's in-place type promotions: int -> long, float -> double, decimal(P, S) -> decimal(P' > P, S)."""
    from pyiceberg import types as t

    if isinstance(current, t.IntegerType) and isinstance(wanted, t.LongType):
        return True
    if isinstance(current, t.FloatType) and isinstance(wanted, t.DoubleType):
        return True
    return (isinstance(current, t.DecimalType) and isinstance(wanted, t.DecimalType)
            and wanted.scale == current.scale and wanted.precision > current.precision)


def plan_evolution(table: Any, declaration: Mapping[str, Any]) -> dict[str, Any]:
    """What evolving ``table`` to ``declaration`` takes, checked before anything is committed.

    Returns ``{"add": [...], "promote": [...], "relax": [...], "docs": [...], "partition_add": [...],
    "partition_remove": [...], "properties": {...}, "kept_undeclared_columns": [...]}``; raises
    ``TableEvolutionError`` listing every change Iceberg cannot make in place.
    """
    schema = table.schema()
    current = {f.name: f for f in schema.fields}
    problems: list[str] = []
    plan: dict[str, Any] = {"add": [], "promote": [], "relax": [], "docs": [], "partition_add": [],
                            "partition_remove": [], "properties": {}, "kept_undeclared_columns": []}
    for column in declaration["columns"]:
        name, wanted = column["name"], iceberg_type(column["type"])
        required = bool(column.get("required"))
        found = current.get(name)
        if found is None:
            if required:
                problems.append(f"columns.{name}: a new column cannot be required (existing rows have no value); "
                                "declare it required: false")
            plan["add"].append(column)
            continue
        if found.field_type != wanted:
            if _promotion_allowed(found.field_type, wanted):
                plan["promote"].append(column)
            else:
                problems.append(f"columns.{name}: {found.field_type} cannot become {wanted} in place; Iceberg "
                                "promotes only int -> long, float -> double and decimal(P,S) -> decimal(P',S), P' > P")
        if found.required and not required:
            plan["relax"].append(name)
        elif required and not found.required:
            problems.append(f"columns.{name}: an optional column cannot become required in place; "
                            "declare it required: false")
        if (column.get("doc") or None) != (found.doc or None):
            plan["docs"].append(column)
    declared_names = {c["name"] for c in declaration["columns"]}
    plan["kept_undeclared_columns"] = [name for name in current if name not in declared_names]

    spec = table.spec()
    have = {}
    for field in spec.fields:
        source = schema.find_field(field.source_id).name
        have[(source, str(field.transform))] = field.name
    want = {(p["source"], transform_text(p)): p for p in declaration.get("partition_by") or []}
    plan["partition_add"] = [p for key, p in want.items() if key not in have]
    plan["partition_remove"] = [name for key, name in have.items() if key not in want]

    properties = table_properties(declaration)
    plan["properties"] = {k: v for k, v in properties.items() if table.properties.get(k) != v}
    if problems:
        raise TableEvolutionError(f"table {identifier(declaration)} cannot be evolved to its declaration "
                                  "(nothing was changed):\n" + "\n".join(f"  - {p}" for p in problems))
    return plan


def describe_changes(plan: Mapping[str, Any]) -> list[str]:
    changes = [f"add column {c['name']} {c['type']}" for c in plan["add"]]
    changes += [f"promote column {c['name']} to {c['type']}" for c in plan["promote"]]
    changes += [f"make column {name} optional" for name in plan["relax"]]
    changes += [f"document column {c['name']}" for c in plan["docs"]]
    changes += [f"add partition field {transform_text(p)}({p['source']})" for p in plan["partition_add"]]
    changes += [f"remove partition field {name} (existing files keep their spec)" for name in plan["partition_remove"]]
    if plan["properties"]:
        changes.append(f"set properties {', '.join(sorted(plan['properties']))}")
    return changes


def describe(table: Any) -> dict[str, Any]:
    """What a table is now: its ids, schema and spec versions, and the promises it carries."""
    return {
        "identifier": ".".join(table.name()[-2:]) if isinstance(table.name(), tuple) else str(table.name()),
        "table_uuid": str(table.metadata.table_uuid),
        "schema_id": table.schema().schema_id,
        "spec_id": table.spec().spec_id,
        "columns": [f.name for f in table.schema().fields],
        "partition_fields": [f.name for f in table.spec().fields],
        "owner": table.properties.get(OWNER_PROPERTY, ""),
        "freshness_minutes": table.properties.get(FRESHNESS_PROPERTY, ""),
        "maintenance": table.properties.get(MAINTENANCE_PROPERTY, ""),
    }


def ensure_namespace(catalog: Any, namespace: str) -> None:
    """Create the namespace unless it exists; a concurrent creator winning the race is fine.

    The REST fixture answers a lost race with a 500 (its SQLite insert fails), not a 409.
    """
    try:
        catalog.create_namespace_if_not_exists(namespace)
    except Exception:
        if not catalog.namespace_exists(namespace):
            raise


def apply_table(catalog: Any, declaration: Mapping[str, Any]) -> dict[str, Any]:
    """Create or evolve one declared table; never drops anything. Returns what was done (see module doc)."""
    from pyiceberg.exceptions import NoSuchTableError

    ident = identifier(declaration)
    ensure_namespace(catalog, declaration["namespace"])
    try:
        table = catalog.load_table(ident)
    except NoSuchTableError:
        schema = _schema(declaration)
        table = catalog.create_table(ident, schema=schema, partition_spec=_partition_spec(declaration, schema),
                                     properties=table_properties(declaration))
        return {**describe(table), "identifier": ident, "action": "created", "changes": [],
                "kept_undeclared_columns": []}
    plan = plan_evolution(table, declaration)
    changes = describe_changes(plan)
    if changes:
        with table.transaction() as tx:
            if plan["add"] or plan["promote"] or plan["relax"] or plan["docs"]:
                with tx.update_schema() as update:
                    for column in plan["add"]:
                        update.add_column(column["name"], iceberg_type(column["type"]), doc=column.get("doc") or None)
                    for column in plan["promote"]:
                        update.update_column(column["name"], field_type=iceberg_type(column["type"]))
                    for name in plan["relax"]:
                        update.make_column_optional(name)
                    for column in plan["docs"]:
                        update.update_column(column["name"], doc=column.get("doc") or "")
            if plan["partition_add"] or plan["partition_remove"]:
                with tx.update_spec() as spec_update:
                    for name in plan["partition_remove"]:
                        spec_update.remove_field(name)
                    for part in plan["partition_add"]:
                        spec_update.add_field(part["source"], transform_text(part), partition_field_name(part))
            if plan["properties"]:
                tx.set_properties(plan["properties"])
        table = catalog.load_table(ident)
    return {**describe(table), "identifier": ident, "action": "evolved" if changes else "unchanged",
            "changes": changes, "kept_undeclared_columns": plan["kept_undeclared_columns"]}


# -- the same declaration as Trino SQL (where Trino creates the tables: the aws target) ------------

TRINO_TYPES = {"boolean": "boolean", "int": "integer", "long": "bigint", "float": "real", "double": "double",
               "date": "date", "timestamp": "timestamp(6)", "timestamptz": "timestamp(6) with time zone",
               "string": "varchar", "uuid": "uuid", "binary": "varbinary"}
PROMOTABLE = ("int", "long", "float", "double")  # and decimals: Trino's SET DATA TYPE makes Iceberg's promotions


def trino_type(name: str) -> str:
    return name if name.startswith("decimal(") else TRINO_TYPES[name]


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _trino_partition(part: Mapping[str, Any]) -> str:
    # Unquoted: Trino 476 compares partition fields by their text, and a quoted name never equals the
    # existing field, so `SET PROPERTIES partitioning` would replace the spec instead of extending it.
    source = str(part["source"])
    transform = str(part.get("transform") or "identity")
    if transform == "identity":
        return source
    if transform in ("bucket", "truncate"):
        return f"{transform}({source}, {int(part.get('width') or 0)})"
    return f"{transform}({source})"


def trino_statements(catalog: str, declaration: Mapping[str, Any]) -> list[str]:
    """Idempotent Trino statements that create the declared table or evolve it (never drop anything).

    Checked on Trino 476: CREATE ... IF NOT EXISTS, ADD COLUMN IF NOT EXISTS, SET DATA TYPE (a no-op
    at the same type, Iceberg's promotions otherwise) and SET PROPERTIES extra_properties (merged;
    the keys must be in the catalog's ``iceberg.allowed-extra-properties``). The partition spec is
    set when the table is created and not evolved here: on Trino 476, ``SET PROPERTIES partitioning``
    with one field added replaced the whole spec by the new field once, and removing one fails
    ("Cannot add duplicate partition field"). A new column is added nullable; relaxing NOT NULL is
    not repeatable in Trino ("Column is already nullable"). Both are left to an operator there.
    """
    table = f'"{catalog}"."{declaration["namespace"]}"."{declaration["name"]}"'
    properties = table_properties(declaration)
    own = "".join(f", {name} = {int(properties.pop(key))}" for key, name in TRINO_OWN_PROPERTIES.items()
                  if key in properties)
    extra = (f"MAP(ARRAY[{', '.join(_literal(k) for k in properties)}], "
             f"ARRAY[{', '.join(_literal(v) for v in properties.values())}])")
    partitioning = f"ARRAY[{', '.join(_literal(_trino_partition(p)) for p in declaration.get('partition_by') or [])}]"

    def column(c: Mapping[str, Any], create: bool) -> str:
        text = f'"{c["name"]}" {trino_type(c["type"])}'
        if create and c.get("required"):
            text += " NOT NULL"
        return text + (f" COMMENT {_literal(c['doc'])}" if c.get("doc") else "")

    columns = ", ".join(column(c, True) for c in declaration["columns"])
    statements = [
        f'CREATE SCHEMA IF NOT EXISTS "{catalog}"."{declaration["namespace"]}"',
        f"CREATE TABLE IF NOT EXISTS {table} ({columns}) WITH (format_version = 2, partitioning = {partitioning}, "
        f"extra_properties = {extra}{own})",
    ]
    for c in declaration["columns"]:
        statements.append(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column(c, False)}")
        if c["type"] in PROMOTABLE or c["type"].startswith("decimal("):
            statements.append(f'ALTER TABLE {table} ALTER COLUMN "{c["name"]}" SET DATA TYPE {trino_type(c["type"])}')
    statements.append(f"ALTER TABLE {table} SET PROPERTIES extra_properties = {extra}{own}")
    return statements
