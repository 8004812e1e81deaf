"""Runtime: every service has a memory limit (or budget) and a health check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lakehouse_platform.policies.adapters import aws, docker
from lakehouse_platform.policies.resources import (
    DOCKER_CONTAINER,
    ECS_SERVICE,
    ECS_TASK_DEFINITION,
    LB_TARGET_GROUP,
    LOCAL_SERVICE,
    PolicyDef,
    Resource,
    StackContext,
    index_of,
    is_dynamic,
    message,
)
from lakehouse_platform.policies.wire import is_unknown, known, number, reveal, truthy


def check_memory_limit(resource: Resource, context: StackContext | None) -> list[str]:
    """Every container (docker) and ECS task has a memory limit; every native service a memory budget.

    A local process cannot be capped like a container; the native target records the budget
    (``memory_budget_bytes``) that the resident-memory probe holds it to, and sizes its heap below it.
    """
    rule = "memory-limit"
    if resource.type == LOCAL_SERVICE:
        budget = reveal(resource.props.get("memory_budget_bytes"))
        if is_unknown(budget) or number(budget):
            return []
        return [message(resource, rule, "local service declares no memory budget (memory_budget_bytes); the "
                                        "resident-memory probe has nothing to hold it to", context)]
    if resource.type == DOCKER_CONTAINER:
        memory = reveal(resource.props.get("memory"))
        if is_unknown(memory):
            return []
        if not number(memory):
            return [message(resource, rule, "container has no memory limit (memory); one runaway JVM takes the "
                                            "whole host down: set the service's memory budget", context)]
    elif resource.type == ECS_TASK_DEFINITION:
        if known(resource.props.get("memory")) and number(resource.props.get("memory")) != 0:
            return []
        if is_unknown(reveal(resource.props.get("memory"))):
            return []
        containers = aws.container_definitions(resource)
        if containers is None:
            return []
        bare = [str(c.get("name")) for c in containers if not c.get("memory")]
        if bare:
            return [message(resource, rule, f"task has no task-level memory and container(s) {', '.join(bare)} "
                                            "have no memory limit", context)]
    return []


def check_health_check(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """Every service has a health check: docker healthcheck, native ``health``, ECS container or target group check.

    Jobs (containers that run once: restart "no") need none. An ECS service is covered by the
    health checks of its task definition's essential containers, or by a load balancer target
    group whose health check is not disabled.
    """
    rule = "service-health-check"
    index = index_of(resources)
    out: list[str] = []
    task_defs = [r for r in resources if r.type == ECS_TASK_DEFINITION]
    for r in resources:
        if r.type == DOCKER_CONTAINER and not docker.is_job(r):
            tests = docker.healthcheck_tests(r.props.get("healthcheck"))
            if not tests or tests[0].upper() == "NONE":
                out.append(message(r, rule, "server container has no health check (healthcheck); nothing can tell "
                                            "a started service from a ready one", context, index))
        elif is_dynamic(r.type) and "health" in r.props:
            health = reveal(r.props.get("health"))
            if not is_unknown(health) and not (isinstance(health, Mapping) and health.get("kind")):
                out.append(message(r, rule, "local service has no health check (health with kind http, tcp or "
                                            "command)", context, index))
        elif r.type == LB_TARGET_GROUP:
            check = reveal(r.props.get("healthCheck"))
            if isinstance(check, Mapping) and truthy(check.get("enabled")) is False:
                out.append(message(r, rule, "target group's health check is disabled", context, index))
        elif r.type == ECS_SERVICE:
            lbs = reveal(r.props.get("loadBalancers")) or []
            if isinstance(lbs, list) and lbs:
                continue  # the target group's health check (enabled unless disabled, checked above)
            tds = aws.linked(r, task_defs, "taskDefinition", aws.task_keys)
            if not tds:
                out.append(message(r, rule, "ECS service has no load balancer and its task definition was not found; "
                                            "give its containers a healthCheck", context, index))
                continue
            for td in tds:
                containers = aws.container_definitions(td)
                if containers is None:
                    continue
                bare = [str(c.get("name")) for c in containers if c.get("essential", True) and not c.get("healthCheck")]
                if bare:
                    out.append(message(r, rule, f"ECS service has no load balancer and container(s) {', '.join(bare)} "
                                                f"of task definition '{td.name}' have no healthCheck", context, index))
    return out


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("memory-limit", "Every container and ECS task has a memory limit; every native service a memory "
              "budget.", "resource", check_memory_limit),
    PolicyDef("service-health-check", "Every service has a health check.", "stack", check_health_check),
)
