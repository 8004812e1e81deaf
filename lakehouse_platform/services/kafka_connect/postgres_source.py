"""``PostgresSource``: a CDC source in PostgreSQL (a typed Pulumi dynamic resource, the docker and native
targets' deployment step before the connectors).

Idempotent statements on create and update (schema, seed, role, publication, slot), the teardown statements
on delete (after the connector released the slot: a slot still held after a grace period is released by
terminating its walsender, since the connector that held it is gone). Passwords are Pulumi secrets
(``additional_secret_outputs``). ``diff`` checks the live state: a slot dropped by hand is a change, so the
next ``pulumi up`` converges. The provider travels by reference to its class (``lakehouse_platform.providers``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from lakehouse_platform.providers import PlainBlob, code_changed, dropped, is_unknown, plain, poll

POLL_S = 0.5
SLOT_RELEASE_GRACE_S = 30.0


class PostgresSourceError(Exception):
    """The CDC source could not be set up or torn down; the message is for the operator (never holds a secret)."""


def _connect(p: Mapping[str, Any]) -> Any:  # a psycopg.Connection (imported only when a source runs)
    import psycopg

    return psycopg.connect(host=p["host"], port=int(p["port"]), user=p["user"], password=p["password"],
                           dbname=p["database"], autocommit=True, connect_timeout=15)


def run_statements(p: Mapping[str, Any], statements: Sequence[str], params: Mapping[str, str]) -> None:
    """Each statement on its own (autocommit), ``{name}`` placeholders bound as SQL literals by the driver."""
    from psycopg import sql

    literals = {k: sql.Literal(v) for k, v in params.items()}
    with _connect(p) as conn:
        for index, statement in enumerate(statements, start=1):
            try:
                conn.execute(sql.SQL(statement).format(**literals) if literals else statement)
            except Exception as exc:  # noqa: BLE001 - any driver error, reported with the statement
                first_line = statement.strip().splitlines()[0][:120]
                raise PostgresSourceError(f"source {p['database']}: statement {index}/{len(statements)} ({first_line}) "
                                f"failed: {type(exc).__name__}: {str(exc).strip()[:800]}") from None


def slot_exists(p: Mapping[str, Any]) -> bool:
    with _connect(p) as conn:
        row = conn.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", (p["slot"],)).fetchone()
    return bool(row and row[0])


def release_slot(p: Mapping[str, Any], grace_s: float = SLOT_RELEASE_GRACE_S) -> None:
    """Wait for the slot's consumer to let go; after ``grace_s`` terminate the walsender still holding it once."""
    if not p.get("slot"):
        return
    with _connect(p) as conn:
        def holder() -> int | None:
            row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s AND active",
                               (p["slot"],)).fetchone()
            return row[0] if row is not None else None

        def released() -> bool | None:
            return True if holder() is None else None

        if poll(released, grace_s, POLL_S) or (pid := holder()) is None:
            return
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        poll(released, 5.0, POLL_S)  # still held after that: the teardown's own check reports it


def teardown_source(p: Mapping[str, Any]) -> None:
    release_slot(p)
    run_statements(p, p.get("teardown") or [], {})
    if p.get("slot") and slot_exists(p):
        raise PostgresSourceError(f"source {p['database']}: slot {p['slot']} is still active after its connector "
                                  "was removed")


SOURCE_INPUTS = ("host", "port", "database", "user", "password", "apply", "teardown", "params", "slot")


def _changes(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """The inputs that changed, and ``slot`` when the replication slot was dropped by hand."""
    old, new = plain(olds), plain(news)
    changed = [k for k in SOURCE_INPUTS if is_unknown(news.get(k)) or old.get(k) != new.get(k)]
    if not changed and new.get("slot"):
        try:
            if not slot_exists(new):
                changed.append("slot")  # dropped by hand: set it up again
        except Exception:  # noqa: BLE001, S110 - an unreachable database: the inputs decide
            pass
    return changed


class PostgresSourceProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Sets a CDC source up in PostgreSQL and tears it down on delete (contract: module docstring)."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        p = plain(props)
        started = time.monotonic()
        run_statements(p, p["apply"], p.get("params") or {})
        return pulumi.dynamic.CreateResult(f"{p['database']}-{p['slot']}",
                                           {**p, "apply_seconds": round(time.monotonic() - started, 2)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return pulumi.dynamic.DiffResult(changes=bool(_changes(olds, news)) or code_changed(olds, news),
                                         replaces=[], stables=[], delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        old, new = plain(olds), plain(news)
        if not _changes(olds, news):  # only the provider's code changed: recorded, the database left alone
            return pulumi.dynamic.UpdateResult({**new, "apply_seconds": old.get("apply_seconds", 0.0)})
        if (old.get("database"), old.get("slot")) != (new.get("database"), new.get("slot")):
            teardown_source(old)  # another source now: the old slot must not retain WAL forever
        started = time.monotonic()
        run_statements(new, new["apply"], new.get("params") or {})
        return pulumi.dynamic.UpdateResult({**new, "apply_seconds": round(time.monotonic() - started, 2)})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Tear the source down; an unreachable database does not block a destroy.

        A stopped server retains no WAL, and PostgreSQL's next start drops every inactive slot no
        declared connector owns (lakehouse_platform/services/postgres/, drop_undeclared_slots_sql).
        """
        import psycopg

        p = plain(props)
        try:
            teardown_source(p)
        except psycopg.OperationalError as exc:
            dropped(f"CDC source {p['database']}", f"the database is unreachable ({str(exc).strip()[:200]}); slot "
                    f"{p.get('slot')} is dropped at PostgreSQL's next start")


class PostgresSource(pulumi.dynamic.Resource, module="streams", name="PostgresSource"):
    """A CDC source in PostgreSQL: what a Debezium connector reads, owned by the platform."""

    apply_seconds: pulumi.Output[float]

    def __init__(self, resource_name: str, *, host: pulumi.Input[str], port: pulumi.Input[int],
                 database: pulumi.Input[str], user: pulumi.Input[str], password: pulumi.Input[str],
                 apply: Sequence[str], teardown: Sequence[str], params: pulumi.Input[Mapping[str, pulumi.Input[str]]],
                 slot: str, opts: pulumi.ResourceOptions | None = None) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["password", "params"])
        super().__init__(PostgresSourceProvider(), resource_name,
                         {"host": host, "port": port, "database": database, "user": user, "password": password,
                          "apply": list(apply), "teardown": list(teardown), "params": params, "slot": slot,
                          "apply_seconds": None},
                         pulumi.ResourceOptions.merge(opts, secret))
