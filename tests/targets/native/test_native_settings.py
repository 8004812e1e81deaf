"""A service's own settings on the native target: ``services.<x>.env`` reaches the process, under the plan's own
values (as on docker and aws); a container ``command`` override is refused by the model, not ignored."""

from __future__ import annotations

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from tests.support.harness import run_program
from tests.support.stacks import stack_platform

LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"


def test_a_services_env_reaches_its_native_process_under_the_plans_own() -> None:
    platform = stack_platform("native")
    platform["services"]["prometheus"] = {"env": {"GOMAXPROCS": "1", "LAKEHOUSE_NOTE": "set by the stack"}}
    run = run_program("native", platform)
    (process,) = [r for r in run.of_type(LOCAL_SERVICE) if r.name == "prometheus"]
    env = process.inputs["env"]
    assert env["GOMAXPROCS"] == "1" and env["LAKEHOUSE_NOTE"] == "set by the stack"


def test_a_container_command_override_is_refused_natively_naming_the_key() -> None:
    platform = stack_platform("native")
    platform["services"]["prometheus"] = {"command": ["--web.enable-lifecycle"]}
    with pytest.raises(ConfigError) as refused:
        load_platform(platform)
    assert refused.value.errors == [
        "lakehouse:platform.services.prometheus.command: a container command override; natively a service runs its "
        "own process (no image entrypoint takes it): remove it from the native stack (services.<x>.env applies on "
        "every target)"]
    lab = stack_platform("lab")
    lab["services"]["prometheus"] = {"command": ["--web.enable-lifecycle"]}
    assert load_platform(lab).services["prometheus"].command == ["--web.enable-lifecycle"]  # docker and aws take it
