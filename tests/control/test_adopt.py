"""Adopting what an earlier release recorded (``lakehouse_platform.control.adopt``), and this release's providers
acting on it: the state each supported release recorded (``tests/control/data/recorded-<version>.json``,
``recorded_states``) is rewritten to this release's providers, which then read, diff and delete it."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lakehouse_platform import version
from lakehouse_platform.control import adopt
from lakehouse_platform.targets.native import local_service as ls
from lakehouse_platform.targets.native import runtime
from tests.control.recorded_states import DATA, STATE
from tests.support.harness import ProgramRun


def recorded(release: str, state_dir: Path | None = None) -> dict[str, Any]:
    """The deployment ``release`` recorded, its state directory at ``state_dir`` (else left as ``@STATE@``)."""
    text = (DATA / f"recorded-{release}.json").read_text()
    if state_dir is not None:
        text = text.replace(STATE, str(state_dir))
    deployment: dict[str, Any] = json.loads(text)
    return deployment


def dynamic(deployment: dict[str, Any], kind: str = "") -> list[dict[str, Any]]:
    return [r for r in deployment["resources"] if r["type"].startswith("pulumi-python:dynamic") and
            r["type"].endswith(kind)]


def test_every_supported_release_has_its_recorded_state_and_the_previous_release_is_supported() -> None:
    """Cutting a release adds it here, with the state it records (``recorded_states``): the next one takes it over."""
    assert sorted(path.stem.removeprefix("recorded-") for path in DATA.glob("recorded-*.json")) == \
        sorted(adopt.SUPPORTED_RELEASES)
    previous = version.previous_release()
    assert previous is None or previous[0] in adopt.SUPPORTED_RELEASES


def test_every_dynamic_type_is_adopted_as_the_programs_record_it(lab_run: ProgramRun, native_run: ProgramRun,
                                                                   cloud_with_tables: ProgramRun) -> None:
    """What ``adopt`` writes for a type is exactly what this release's programs record for it, for every type they
    register (lab, native, cloud with a declared table), and it knows no type they do not register."""
    written: dict[str, set[str]] = {}
    for run in (lab_run, native_run, cloud_with_tables):
        for resource in run.resources:
            if resource.type.startswith("pulumi-python:dynamic"):
                written.setdefault(resource.type, set()).add(resource.inputs["__provider"])
    assert sorted(written) == sorted(adopt.providers())
    for resource_type, blobs in written.items():
        assert blobs == {adopt.current_provider(resource_type)}, resource_type


@pytest.mark.parametrize("release", adopt.SUPPORTED_RELEASES)
def test_a_recorded_deployment_is_rewritten_to_this_releases_providers_once(release: str) -> None:
    deployment = recorded(release)
    untouched = copy.deepcopy([r for r in deployment["resources"] if r not in dynamic(deployment)])
    adopted = adopt.adopt_deployment(deployment)
    assert sorted(adopted.urns) == sorted(r["urn"] for r in dynamic(deployment))
    for resource in dynamic(deployment):
        current = adopt.current_provider(resource["type"])
        assert resource["inputs"]["__provider"] == resource["outputs"]["__provider"] == current
    assert [r for r in deployment["resources"] if r not in dynamic(deployment)] == untouched
    assert not adopt.adopt_deployment(deployment), "a second adoption changes nothing"


def test_a_dynamic_type_this_release_does_not_know_is_refused_and_nothing_changes() -> None:
    deployment = recorded(adopt.SUPPORTED_RELEASES[-1])
    deployment["resources"].append({"urn": "urn:pulumi:s::p::pulumi-python:dynamic/other:Thing::x",
                                    "type": "pulumi-python:dynamic/other:Thing", "inputs": {"__provider": "x"},
                                    "outputs": {"__provider": "x"}})
    before = copy.deepcopy(deployment)
    with pytest.raises(adopt.AdoptionRefused, match="dynamic/other:Thing"):
        adopt.adopt_deployment(deployment)
    assert deployment == before


# -- this release's providers act on what each supported release recorded ------------------------------------


def _as_provider_sees(props: dict[str, Any]) -> dict[str, Any]:
    """Recorded properties as the provider host hands them over: without the provider, secrets unwrapped."""
    return {k: v for k, v in props.items() if k != "__provider"}


@pytest.fixture(scope="module")
def exited() -> tuple[int, float]:
    """A pid and start time that are no process's: what a recorded service is once its stack is gone (the recorded
    pids may belong to live processes of this host by now, which a delete must never touch)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid, 1.0


@pytest.mark.parametrize("release", adopt.SUPPORTED_RELEASES)
def test_this_releases_local_service_reads_diffs_and_deletes_what_a_release_recorded(
        release: str, tmp_path: Path, exited: tuple[int, float]) -> None:
    """Refresh, an upgrade's diff (every service's data moved: an update, never a replacement) and a destroy of
    each service the release recorded, by this release's provider: its process long gone, its files removed."""
    provider = ls.LocalServiceProvider()
    services = dynamic(recorded(release, tmp_path), "native:LocalService")
    assert len(services) >= 10, "the recorded native platform"
    for resource in services:
        outputs = {**_as_provider_sees(resource["outputs"]), "pid": exited[0], "create_time": exited[1]}
        ls.ServiceInputs.from_props(outputs)  # what update and delete build first
        read = provider.read(resource["id"], outputs)
        assert read.outs["alive"] is False and read.outs["pid"] == 0, resource["id"]

        news = {**_as_provider_sees(resource["inputs"]), "data_dir": str(tmp_path / "moved" / resource["id"])}
        diff = provider.diff(resource["id"], outputs, news)
        assert diff.changes is True and diff.replaces == [], resource["id"]

        files = [Path(name) for name in outputs.get("files") or {}]
        for path in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("rendered")
        provider.delete(resource["id"], outputs)
        assert not any(path.exists() for path in files), resource["id"]


@pytest.mark.parametrize("release", adopt.SUPPORTED_RELEASES)
def test_this_releases_native_runtime_moves_and_deletes_what_a_release_recorded(release: str,
                                                                                 tmp_path: Path) -> None:
    provider = runtime.NativeRuntimeProvider()
    found = dynamic(recorded(release, tmp_path), "native:NativeRuntime")
    if not found:
        pytest.skip(f"release {release} kept no copy of the operations code (NativeRuntime came later)")
    (resource,) = found
    outputs = _as_provider_sees(resource["outputs"])
    Path(outputs["directory"]).mkdir(parents=True)
    news = {"directory": str(tmp_path / "moved" / "runtime"), "sources": {"lakehouse_platform/__init__.py": ""}}
    assert provider.diff(resource["id"], outputs, news).replaces == []
    moved = provider.update(resource["id"], outputs, news).outs
    assert not Path(outputs["directory"]).exists() and runtime.code_dir(moved["directory"]).is_dir()
    provider.delete(resource["id"], moved)
    assert not Path(moved["directory"]).exists()
