"""Recovery: the catalog database keeps backups at least as long as the recovery layer promises."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lakehouse_platform.policies.resources import (
    BACKUP_PLAN,
    RDS_CLUSTER,
    RDS_INSTANCE,
    PolicyDef,
    Resource,
    StackContext,
    fmt_days,
    index_of,
    message,
    no_context,
)
from lakehouse_platform.policies.wire import is_unknown, known, number, reveal


def _plan_days(resources: Sequence[Resource]) -> tuple[list[float], bool]:
    """How long each AWS Backup plan rule keeps recovery points (inf: until deleted), and whether one is unknown."""
    days_kept: list[float] = []
    unknown = False
    for r in resources:
        if r.type != BACKUP_PLAN:
            continue
        for plan_rule in reveal(r.props.get("rules")) or []:
            lifecycle = plan_rule.get("lifecycle") if isinstance(plan_rule, Mapping) else None
            if isinstance(lifecycle, Mapping):
                days = number(lifecycle.get("deleteAfter"))
                if days is None and is_unknown(lifecycle.get("deleteAfter")):
                    unknown = True
                elif days is None:
                    days_kept.append(float("inf"))  # kept until deleted by hand
                else:
                    days_kept.append(days)
    return days_kept, unknown


def check_backup_retention(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """The catalog database keeps backups at least as long as the recovery layer promises (aws).

    Satisfied by the RDS automated backups (backup_retention_period) or by an AWS Backup plan
    rule whose lifecycle keeps recovery points at least that many days.
    """
    rule = "recovery-backup-retention"
    databases = [r for r in resources
                 if r.type in (RDS_INSTANCE, RDS_CLUSTER) and not known(r.props.get("replicateSourceDb"))]
    if not databases:
        return []
    if context is None:
        return [no_context(rule, "backup retention against the recovery layer's promise")]
    index = index_of(resources)
    promise = context.backup_retention_days
    plan_days, plan_unknown = _plan_days(resources)
    best_plan = max(plan_days, default=None)
    out: list[str] = []
    if plan_unknown or (best_plan is not None and best_plan >= promise):
        return out
    recovery_owner = context.layer_owners.get("recovery", "unknown")
    for db in databases:
        raw = reveal(db.props.get("backupRetentionPeriod"))
        if is_unknown(raw):
            continue
        days = number(raw) or 0
        if days >= promise:
            continue
        plan = (f"no AWS Backup plan keeps them that long (longest delete_after: {fmt_days(best_plan)} days)"
                if best_plan is not None else "no AWS Backup plan covers it")
        out.append(message(db, rule, f"the catalog database keeps backups {fmt_days(days)} days "
                                     f"(backup_retention_period) and {plan}; the recovery layer (owner "
                                     f"{recovery_owner}) promises {promise} days "
                                     f"(recovery.backup_retention_days)", context, index))
    return out


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("recovery-backup-retention", "The catalog database keeps backups at least as long as the recovery "
              "layer promises.", "stack", check_backup_retention, needs_context=True),
)
