"""Runtime rules: memory limits and health checks."""

from __future__ import annotations

import copy

from tests.support.policy_support import UNKNOWN_STRING, aws, cloud_context, ecs_task, lab, named, violations


def test_container_without_memory_limit_is_refused():
    resources, context = lab()
    named(resources, "polaris-bootstrap").props.pop("memory")
    assert violations("memory-limit", resources, context) == [
        "docker:Container 'polaris-bootstrap' (layer catalog, owner platform) breaks memory-limit: container has no "
        "memory limit (memory); one runaway JVM takes the whole host down: set the service's memory budget"
    ]
    task = ecs_task("trino", [{"name": "trino", "image": "trinodb/trino:483"}], "trino", memory=None)
    assert violations("memory-limit", [task], cloud_context()) == [
        "aws:TaskDefinition 'trino' (layer compute, owner analytics engineering) breaks memory-limit: task has no "
        "task-level memory and container(s) trino have no memory limit"
    ]


def test_server_without_health_check_is_refused_and_jobs_need_none():
    resources, context = lab()
    named(resources, "polaris", "docker:index/container:Container").props.pop("healthcheck")
    assert "healthcheck" not in named(resources, "polaris-bootstrap").props
    assert violations("service-health-check", resources, context) == [
        "docker:Container 'polaris' (layer catalog, owner platform) breaks service-health-check: server container "
        "has no health check (healthcheck); nothing can tell a started service from a ready one"
    ]


def test_ecs_service_without_any_health_check_is_refused():
    context = cloud_context()
    task = ecs_task("polaris", [{"name": "polaris", "image": "apache/polaris:1.7.0", "memory": 1024}], "polaris", "catalog")
    service = aws("aws:ecs/service:Service", "polaris", "catalog", {"taskDefinition": UNKNOWN_STRING}, service="polaris")
    assert violations("service-health-check", [task, service], context) == [
        "aws:Service 'polaris' (layer catalog, owner platform) breaks service-health-check: ECS service has no load "
        "balancer and container(s) polaris of task definition 'polaris' have no healthCheck"
    ]
    fronted = copy.deepcopy(service)
    fronted.props["loadBalancers"] = [{"targetGroupArn": "arn:tg", "containerName": "polaris", "containerPort": 8181}]
    group = aws("aws:lb/targetGroup:TargetGroup", "polaris-tg", "catalog", {"healthCheck": {"enabled": False}},
                service="polaris")
    assert violations("service-health-check", [task, fronted, group], context) == [
        "aws:TargetGroup 'polaris-tg' (layer catalog, owner platform) breaks service-health-check: target group's "
        "health check is disabled"
    ]
