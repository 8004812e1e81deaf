"""``EcsTaskRun``: a Pulumi dynamic resource that runs one ECS task to completion as a deployment step.

On aws the catalogs and Trino live in private subnets the deploying machine cannot reach, so a
deployment step that talks to them (creating the declared tables through Trino) is an ECS task
started inside the VPC. create and update run the task (``ecs:RunTask``, Fargate), wait until it
stops, and fail with the container's exit code and stop reason unless it exited 0; the task's log
is in its CloudWatch log group. delete does nothing (the task's effects are the point). A change of
``trigger`` (a digest of what the task does) or of the task definition runs it again.

Runs with the deploying machine's AWS credentials (the same ones ``pulumi up`` uses); boto3 only.
Serialized by reference to its class like every provider of the project (``lakehouse_platform.providers``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from lakehouse_platform.providers import PlainBlob, code_changed, poll

WAIT_S = 1800  # a deployment step that takes longer is a broken one
POLL_S = 10


class EcsTaskFailed(Exception):
    """The task did not run to a clean exit; the message names the task, the exit code and the reason."""


def run_task(props: dict[str, Any]) -> dict[str, Any]:
    """Start the task, wait for it to stop, check every essential container exited 0."""
    import boto3

    ecs = boto3.client("ecs", region_name=props["region"])
    started = ecs.run_task(
        cluster=props["cluster"], taskDefinition=props["task_definition"], launchType="FARGATE", count=1,
        networkConfiguration={"awsvpcConfiguration": {"subnets": list(props["subnets"]),
                                                      "securityGroups": list(props["security_groups"]),
                                                      "assignPublicIp": "DISABLED"}},
        startedBy="pulumi-deployment", propagateTags="TASK_DEFINITION")
    if started.get("failures") or not started.get("tasks"):
        raise EcsTaskFailed(f"{props['description']}: ecs:RunTask refused: {started.get('failures')}")
    arn = started["tasks"][0]["taskArn"]
    seen: list[dict[str, Any]] = []

    def stopped() -> dict[str, Any] | None:
        seen[:] = ecs.describe_tasks(cluster=props["cluster"], tasks=[arn])["tasks"][:1]
        return seen[0] if seen[0]["lastStatus"] == "STOPPED" else None

    task = poll(stopped, WAIT_S, POLL_S)
    if task is None:
        raise EcsTaskFailed(f"{props['description']}: task {arn} still {seen[0]['lastStatus']} after {WAIT_S}s")
    bad = [c for c in task.get("containers", []) if c.get("exitCode") != 0]
    if bad:
        detail = "; ".join(f"{c['name']} exit {c.get('exitCode')} ({c.get('reason', '')})" for c in bad)
        raise EcsTaskFailed(f"{props['description']}: task {arn} failed: {detail}; stop reason: "
                            f"{task.get('stoppedReason', '')}; its log is in CloudWatch ({props.get('log_group')})")
    return {**props, "task_arn": arn, "stopped_at": str(task.get("stoppedAt", ""))}


RERUN_KEYS = ("trigger", "task_definition", "cluster")


def _rerun(olds: dict[str, Any], news: dict[str, Any]) -> bool:
    return any(olds.get(k) != news.get(k) for k in RERUN_KEYS)


class EcsTaskRunProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Runs an ECS task to completion on create and when what it does changes (module docstring)."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        outs = run_task(props)
        return pulumi.dynamic.CreateResult(outs["task_arn"], outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return pulumi.dynamic.DiffResult(changes=_rerun(olds, news) or code_changed(olds, news))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        if not _rerun(olds, news):  # only the provider's code changed: recorded, the task not run again
            return pulumi.dynamic.UpdateResult({**olds, **news})
        return pulumi.dynamic.UpdateResult(run_task(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to undo: what the task did (tables created) outlives the step."""


class EcsTaskRun(pulumi.dynamic.Resource, module="aws", name="EcsTaskRun"):
    """One ECS task run to completion as a step of the deployment."""

    task_arn: pulumi.Output[str]

    def __init__(self, name: str, *, description: str, cluster: pulumi.Input[str],
                 task_definition: pulumi.Input[str], subnets: pulumi.Input[Sequence[pulumi.Input[str]]],
                 security_groups: pulumi.Input[Sequence[pulumi.Input[str]]], region: str, trigger: str,
                 log_group: pulumi.Input[str] | None = None, tags: dict[str, str] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        props = {"description": description, "cluster": cluster, "task_definition": task_definition,
                 "subnets": subnets, "security_groups": security_groups, "region": region, "trigger": trigger,
                 "log_group": log_group, "labels": tags or {}, "task_arn": None}
        super().__init__(EcsTaskRunProvider(), name, props, opts)
