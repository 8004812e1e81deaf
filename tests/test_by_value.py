"""Providers serialized by value (lakehouse_platform/by_value.py, docs/adr/0015): their code, by module name, never a path.

Each blob is loaded the way the engine's provider process loads it: a fresh interpreter, ``cwd=/``, no
``PYTHONPATH``, where the project is not importable at all.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from typing import Any

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from lakehouse_platform import by_value
from lakehouse_platform.resources.certificate import CertificateProvider
from lakehouse_platform.services.flink.job import FlinkJobProvider
from lakehouse_platform.services.kafka_connect.connectors import ConnectorProvider
from lakehouse_platform.services.kafka_connect.postgres_source import PostgresSourceProvider
from lakehouse_platform.targets.aws.run_task import EcsTaskRunProvider
from lakehouse_platform.targets.declared_tables.provider import DeclaredTableProvider
from lakehouse_platform.targets.lab_state import LabStateProvider
from lakehouse_platform.targets.native.local_service import LocalServiceProvider
from lakehouse_platform.targets.native.runtime import NativeRuntimeProvider
from lakehouse_platform.targets.state_owner import StateOwnerProvider
from tests.support import REPO_ROOT
from tests.support.harness import ProgramRun

LOCAL_SERVICE = "lakehouse_platform.targets.native.local_service"
#: What each provider carries: a new import of a provider is a decision (its blob, hence its diff, grows).
CLOSURES = {
    LocalServiceProvider: [f"{LOCAL_SERVICE}.{m}" for m in ("errors", "health", "host", "inputs", "lifecycle",
                                                              "ports", "processes", "provider", "spawn")]
    + ["lakehouse_platform.runtime.watchdog"],
    DeclaredTableProvider: ["lakehouse_platform.runtime.tables", "lakehouse_platform.targets.declared_tables.provider"],
    ConnectorProvider: ["lakehouse_platform.services.kafka_connect.connectors"],
    PostgresSourceProvider: ["lakehouse_platform.services.kafka_connect.postgres_source"],
    FlinkJobProvider: [f"lakehouse_platform.services.flink.job.{m}" for m in ("inputs", "lifecycle", "lineage", "provider")]
    + ["lakehouse_platform.services.flink.rest"],
    CertificateProvider: ["lakehouse_platform.resources.certificate"],
    EcsTaskRunProvider: ["lakehouse_platform.targets.aws.run_task"],
    LabStateProvider: ["lakehouse_platform.targets.lab_state", "lakehouse_platform.targets.state_move",
                       "lakehouse_platform.targets.state_owner"],
    StateOwnerProvider: ["lakehouse_platform.targets.state_owner"],
    NativeRuntimeProvider: ["lakehouse_platform.targets.native.runtime"],
}

# Run in the provider process's conditions: the blob's provider loaded where the project is not importable (the
# venv's editable install would find this checkout: a finder in front refuses it, so the blob may not use it).
LOAD = (
    "import base64, sys, dill\n"
    "class NoProject:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'lakehouse_platform' or name.startswith('lakehouse_platform.'):\n"
    "            raise ImportError(f'the project was imported by name: {name}')\n"
    "sys.meta_path.insert(0, NoProject())\n"
    "for line in sys.stdin:\n"
    "    p = dill.loads(base64.b64decode(line))\n"
    "    print(type(p).__module__, type(p).__name__, getattr(sys.modules[type(p).__module__], 'MARK', '-'))\n"
)


def load_in_a_provider_process(*blobs: str) -> list[list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", LOAD], input="\n".join(blobs) + "\n", cwd="/", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


@pytest.mark.parametrize("provider_class", list(CLOSURES), ids=lambda c: c.__name__)
def test_a_blob_carries_its_code_by_name_and_loads_where_the_project_is_not(provider_class: type) -> None:
    blob = serialize_provider(provider_class())
    assert blob == serialize_provider(provider_class()), "deterministic, or every up shows a diff"
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"
    assert sorted(by_value.closure(provider_class.__module__)) == sorted(["lakehouse_platform.by_value",
                                                                           *CLOSURES[provider_class]])
    [(module, name, _mark)] = load_in_a_provider_process(blob)
    assert name == provider_class.__name__
    assert module.startswith(by_value.ROOT_PREFIX) and module.endswith(provider_class.__module__)


def test_two_releases_of_a_provider_load_side_by_side_each_with_its_own_helpers() -> None:
    """An upgrade's deletes run the old code and its updates the new, in one provider process."""
    module, helper = "lakehouse_platform.targets.lab_state", "lakehouse_platform.by_value"
    sources = by_value.closure(module)
    old = {**sources, helper: sources[helper] + "\nMARK_HELPER = 'old'\n",
           module: sources[module] + "\nfrom lakehouse_platform.by_value import MARK_HELPER as MARK\n"}
    new = {**sources, module: sources[module] + "\nMARK = 'new'\n"}
    blobs = [serialize_provider(_Reduced(by_value.reduce_value(module, "LabStateProvider", s)))  # type: ignore[arg-type]
             for s in (old, new)]
    (old_module, _, old_mark), (new_module, _, new_mark) = load_in_a_provider_process(*blobs)
    assert old_module != new_module
    assert (old_mark, new_mark) == ("old", "new")


def test_code_changed_compares_the_recorded_blob_with_the_programs() -> None:
    assert by_value.code_changed({by_value.PROVIDER_KEY: "a"}, {by_value.PROVIDER_KEY: "b"})
    assert not by_value.code_changed({by_value.PROVIDER_KEY: "a"}, {by_value.PROVIDER_KEY: "a"})
    assert not by_value.code_changed({by_value.PROVIDER_KEY: "a"}, {}), "a preview's unknown blob is no change"


def test_an_import_under_type_checking_is_not_carried() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lakehouse_platform.model import PlatformSpec\n"
              "else:\n    from lakehouse_platform.labels import x\ndef f():\n    from lakehouse_platform.by_value import plain\n")
    assert by_value._project_imports("lakehouse_platform.x", source, False) == {"lakehouse_platform.labels", "lakehouse_platform.by_value"}


class _Reduced:
    """Pickles as a given ``__reduce__`` value (a blob made from other sources than this checkout's)."""

    def __init__(self, reduced: tuple) -> None:
        self.reduced = reduced

    def __reduce__(self) -> tuple:
        return self.reduced


def test_every_dynamic_resource_the_programs_register_loads_from_its_blob_alone(lab_run: ProgramRun,
                                                                            native_run: ProgramRun) -> None:
    """What the lab and native programs put in the state (each resource's ``__provider``) loads in a process
    where the project is not importable: any checkout, or none, can refresh and destroy them."""
    blobs = {}
    for run in (lab_run, native_run):
        for resource in run.resources:
            if resource.type.startswith("pulumi-python:dynamic"):
                blobs.setdefault(by_value.plain(resource.inputs["__provider"]), resource.type.rsplit(":", 1)[-1])
    loaded = load_in_a_provider_process(*blobs)
    assert sorted(name for _, name, _ in loaded) == sorted(f"{kind}Provider" if kind != "SelfSignedCertificate"
                                                           else "CertificateProvider" for kind in blobs.values())


def test_a_parse_tripped_by_another_threads_compile_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython 3.11 raised "AST constructor recursion depth mismatch" for valid source in `make unit` with three
    workers, while Pulumi serialized a provider (by_value's import scan): the scan parses again."""
    import ast

    real_parse = ast.parse
    scanned = "from lakehouse_platform import paths\nimport json\n"
    faults = {"tripped": [SystemError("AST constructor recursion depth mismatch (before=144, after=197)")],
              "other": [SystemError("another fault")] * 3}
    fault: list[list[SystemError]] = [faults["tripped"]]

    def parse(source: str, *args: Any, **kwargs: Any) -> ast.Module:
        if source == scanned and fault[0]:  # only the scan's own source: pytest parses too
            raise fault[0].pop()
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    assert by_value._project_imports("lakehouse_platform.x", scanned, False) == {"lakehouse_platform.paths"}

    fault[0] = faults["other"]
    with pytest.raises(SystemError, match="another fault"):  # any other SystemError is not retried
        by_value._project_imports("lakehouse_platform.x", scanned, False)
