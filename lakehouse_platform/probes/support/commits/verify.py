"""What a run's acknowledged commits must satisfy: each in the snapshot log and in the data exactly once, the
row count exact, no 5xx, nothing given up."""

from __future__ import annotations

from lakehouse_platform.probes.support.commits.batches import OrderBatches, ProbeBatches
from lakehouse_platform.probes.support.commits.outcome import Outcome


def verify(catalog, outcome: Outcome, batches: ProbeBatches | OrderBatches | None = None) -> None:
    """Every acknowledged commit is in the snapshot log and in the data, once; the count is exact."""
    if outcome.five_xx:
        outcome.problems.append(f"{outcome.five_xx} responses were 5xx (never acceptable): "
                                f"{dict(sorted(outcome.statuses.items()))}")
    if outcome.errors:
        outcome.problems.append(f"{len(outcome.errors)} commit(s) failed with a non-retryable error")
    if outcome.gave_up:
        outcome.problems.append(f"{len(outcome.gave_up)} commit(s) were still conflicting after every retry")
    try:
        table = catalog.load_table(outcome.table)
    except Exception as exc:  # noqa: BLE001
        outcome.problems.append(f"the table cannot be loaded after the run: {type(exc).__name__}: {exc}")
        return
    current = table.current_snapshot()
    lineage: set[int] = set()
    snapshot = current
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    while snapshot is not None:
        lineage.add(snapshot.snapshot_id)
        snapshot = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    acked = {c.snapshot_id for c in outcome.commits}
    missing = sorted(acked - lineage)
    if missing:
        outcome.problems.append(f"{len(missing)} acknowledged snapshot(s) are not in the snapshot log: {missing[:10]}")
    per_batch, num_rows = (batches or ProbeBatches()).count(table)
    expected_rows = sum(c.rows for c in outcome.commits)
    wrong = [(c.writer, c.seq, per_batch.get((c.writer, c.seq), 0), c.rows) for c in outcome.commits
             if per_batch.get((c.writer, c.seq), 0) != c.rows]
    if wrong:
        outcome.problems.append(f"{len(wrong)} acknowledged batch(es) do not appear exactly once "
                                f"(writer, seq, rows found, rows committed): {wrong[:10]}")
    unacked = set(per_batch) - {(c.writer, c.seq) for c in outcome.commits}
    if unacked:
        outcome.problems.append(f"{len(unacked)} batch(es) in the table were never acknowledged: {sorted(unacked)[:10]}")
    if num_rows != expected_rows:
        outcome.problems.append(f"row count {num_rows} != {expected_rows} acknowledged rows")
    outcome.verified = {"snapshots": len(by_id), "lineage": len(lineage), "acknowledged": len(acked),
                        "rows": num_rows, "expected_rows": expected_rows}
