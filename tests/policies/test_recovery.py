"""Recovery: backups kept at least as long as the recovery layer promises."""

from __future__ import annotations

import copy

from lakehouse_platform.config import load_platform
from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.resources import StackContext
from tests.support.policy_support import aws, cloud_context, graph, stack_platform, violations


def test_backup_retention_below_the_recovery_promise_is_refused():
    context = cloud_context()
    assert context.backup_retention_days == 14
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 7}, service="postgres")
    short_plan = aws("aws:backup/plan:Plan", "catalog-backup", "recovery",
                     {"rules": [{"ruleName": "daily", "lifecycle": {"deleteAfter": 10}}]})
    assert violations("recovery-backup-retention", [rds, short_plan], context) == [
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks recovery-backup-retention: the catalog "
        "database keeps backups 7 days (backup_retention_period) and no AWS Backup plan keeps them that long (longest "
        "delete_after: 10 days); the recovery layer (owner platform) promises 14 days (recovery.backup_retention_days)"
    ]
    long_plan = copy.deepcopy(short_plan)
    long_plan.props["rules"][0]["lifecycle"]["deleteAfter"] = 35
    assert violations("recovery-backup-retention", [rds, long_plan], context) == []
    rds.props["backupRetentionPeriod"] = 14
    assert violations("recovery-backup-retention", [rds], context) == []


def test_recovery_promise_comes_from_the_stack_config():
    platform = copy.deepcopy(stack_platform("cloud"))
    platform["recovery"]["backup_retention_days"] = 30
    context = StackContext.from_dict(pack_config.stack_context(load_platform(platform), "cloud"))
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 14}, service="postgres")
    assert violations("recovery-backup-retention", [rds], context) == [
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks recovery-backup-retention: the catalog "
        "database keeps backups 14 days (backup_retention_period) and no AWS Backup plan covers it; the recovery "
        "layer (owner platform) promises 30 days (recovery.backup_retention_days)"
    ]


def test_cloud_graph_refuses_backups_shorter_than_the_promise():
    resources, context = graph("cloud")
    databases = [r for r in resources if r.type in ("aws:rds/instance:Instance", "aws:rds/cluster:Cluster")]
    plans = [r for r in resources if r.type == "aws:backup/plan:Plan"]
    assert databases and plans
    for db in databases:
        db.props["backupRetentionPeriod"] = 7
    assert violations("recovery-backup-retention", resources, context) == []  # the AWS Backup plan keeps 14 days
    for plan in plans:
        for rule in plan.props["rules"]:
            rule["lifecycle"]["deleteAfter"] = 7
    assert violations("recovery-backup-retention", resources, context) == [
        f"aws:Instance '{db.name}' (layer catalog, owner platform) breaks recovery-backup-retention: the catalog "
        "database keeps backups 7 days (backup_retention_period) and no AWS Backup plan keeps them that long (longest "
        "delete_after: 7 days); the recovery layer (owner platform) promises 14 days (recovery.backup_retention_days)"
        for db in databases
    ]
