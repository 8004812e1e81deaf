"""Dynamic providers travel the standard way: by reference to their class (lakehouse_platform/providers.py, ADR 0020).

A provider's ``module:Class`` is part of what every stack's state records, so each is pinned here: moving a
provider, or adding one, is a visible decision (and a moved class must stay importable under its old name until
every state took the new blob, which the first ``pulumi up`` of a release writes: ``code_changed``).
"""

from __future__ import annotations

import ast
import base64
import importlib
import io
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from lakehouse_platform import providers
from lakehouse_platform.control import adopt
from tests.support import REPO_ROOT
from tests.support.harness import ProgramRun

#: Every dynamic provider of the project, as the state records it.
PINNED = (
    "lakehouse_platform.components.aws.pushed_image:PushedImageProvider",
    "lakehouse_platform.components.aws.run_task:EcsTaskRunProvider",
    "lakehouse_platform.resources.certificate:CertificateProvider",
    "lakehouse_platform.services.flink.job.provider:FlinkJobProvider",
    "lakehouse_platform.services.kafka_connect.connectors:ConnectorProvider",
    "lakehouse_platform.services.kafka_connect.postgres_source:PostgresSourceProvider",
    "lakehouse_platform.targets.declared_tables.provider:DeclaredTableProvider",
    "lakehouse_platform.targets.lab_state:LabStateProvider",
    "lakehouse_platform.targets.native.local_service.provider:LocalServiceProvider",
    "lakehouse_platform.targets.native.runtime:NativeRuntimeProvider",
    "lakehouse_platform.targets.state_owner:StateOwnerProvider",
)


def provider_classes_in_the_source() -> set[str]:
    """``module:Class`` of every class in the package that derives from Pulumi's ``ResourceProvider``."""
    found = set()
    package = REPO_ROOT / "lakehouse_platform"
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith("ResourceProvider")
                                                      for base in node.bases):
                module = str(path.relative_to(REPO_ROOT).with_suffix("")).replace("/", ".")
                found.add(f"{module.removesuffix('.__init__')}:{node.name}")
    return found


def provider_of(reference: str) -> type:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def references(blob: str) -> list[str]:
    """The project's classes and functions a blob names (``module:name``), read as the provider process reads it."""
    named: list[str] = []

    class Reading(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> object:
            if module.split(".")[0] == "lakehouse_platform":
                named.append(f"{module}:{name}")
            return super().find_class(module, name)

    Reading(io.BytesIO(base64.b64decode(blob))).load()
    return named


def test_every_provider_of_the_source_is_pinned() -> None:
    assert provider_classes_in_the_source() == set(PINNED)
    # The operator's commands adopt a stack's recorded resources with these same classes (control/adopt.py).
    assert sorted(adopt.providers().values()) == sorted(PINNED)


@pytest.mark.parametrize("reference", PINNED)
def test_a_blob_is_a_reference_to_its_class_and_nothing_else_of_the_project(reference: str) -> None:
    provider = provider_of(reference)()
    blob = serialize_provider(provider)
    assert blob == serialize_provider(provider_of(reference)()), "deterministic, or every up shows a diff"
    assert references(blob) == [reference]
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"
    assert provider.serialize_as_secret_always is False, "a reference to a class is no secret"


# The provider process: the stack's venv runs ``python -m pulumi.dynamic`` from the program's directory, with no
# PYTHONPATH; the project is the venv's installed package.
LOAD = (
    "import base64, sys, dill\n"
    "for line in sys.stdin:\n"
    "    p = dill.loads(base64.b64decode(line))\n"
    "    print(f'{type(p).__module__}:{type(p).__name__}', sys.modules[type(p).__module__].__file__)\n"
)


def load_in_a_provider_process(*blobs: str) -> list[list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", LOAD], input="\n".join(blobs) + "\n", cwd="/", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


def test_every_blob_loads_in_a_provider_process_from_the_installed_package() -> None:
    loaded = load_in_a_provider_process(*(serialize_provider(provider_of(r)()) for r in PINNED))
    assert [reference for reference, _ in loaded] == list(PINNED)
    for _, file in loaded:
        assert Path(file).is_relative_to(REPO_ROOT / "lakehouse_platform"), file


def test_code_changed_compares_the_recorded_blob_with_the_programs() -> None:
    key = providers.PROVIDER_KEY
    assert providers.code_changed({key: "a"}, {key: "b"})
    assert not providers.code_changed({key: "a"}, {key: "a"})
    assert not providers.code_changed({key: "a"}, {}), "a preview's unknown blob is no change"


def test_a_blob_written_by_a_release_that_carried_code_by_value_is_a_change() -> None:
    """0.4.0 pickled each provider as an ``eval`` of its modules' sources: the first ``up`` of this release records
    the reference instead (each provider's update then acts on nothing but the blob)."""
    by_value = base64.b64encode(pickle.dumps((eval, ("(lambda ns: ns)({'SOURCES': {}})", {})))).decode()
    reference = serialize_provider(provider_of(PINNED[0])())
    assert providers.code_changed({providers.PROVIDER_KEY: by_value}, {providers.PROVIDER_KEY: reference})


def test_every_dynamic_resource_the_programs_register_names_a_pinned_provider(lab_run: ProgramRun,
                                                                            native_run: ProgramRun) -> None:
    """What the lab and native programs put in the state (each resource's ``__provider``) is one of the pinned
    references, and loads in a provider process."""
    blobs: dict[str, str] = {}
    for run in (lab_run, native_run):
        for resource in run.resources:
            if resource.type.startswith("pulumi-python:dynamic"):
                blobs.setdefault(providers.plain(resource.inputs[providers.PROVIDER_KEY]), resource.type)
    named = {reference for blob in blobs for reference in references(blob)}
    assert named <= set(PINNED) and len(named) == len(blobs)
    assert sorted(reference for reference, _ in load_in_a_provider_process(*blobs)) == sorted(named)
