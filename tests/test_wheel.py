"""The wheel a team installs: one top-level package with its console script and every data file the code reads; no
tests, tools, benchmarks or docs. Built here as ``make dist`` builds it (``pip wheel --no-deps --no-build-isolation``,
offline), from the checkout's tracked files."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from lakehouse_platform.paths import PACKAGE_DIR, PACKAGE_PARENT
from lakehouse_platform.version import PLATFORM_VERSION
from tests.support import REPO_ROOT
from tests.support.wheel import build_wheel, copy_source, tracked


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_source(tmp_path_factory.mktemp("source"))


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    return zipfile.ZipFile(build_wheel(source, tmp_path_factory.mktemp("dist")))


def test_the_wheel_installs_one_top_level_package_and_the_console_script(wheel):
    names = wheel.namelist()
    info = f"lakehouse_platform-{PLATFORM_VERSION}.dist-info"
    tops = {name.split("/", 1)[0] for name in names}
    print(f"\n== {Path(wheel.filename).name}: {len(names)} files, "
          f"{sum(1 for n in names if n.endswith('.py'))} modules, top level {sorted(tops)}")
    assert tops == {"lakehouse_platform", info}
    assert wheel.read(f"{info}/top_level.txt").decode().split() == ["lakehouse_platform"]
    assert "lakehouse = lakehouse_platform.cli:main" in wheel.read(f"{info}/entry_points.txt").decode()
    metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
    assert (metadata["Name"], metadata["Version"]) == ("lakehouse-platform", PLATFORM_VERSION)
    assert not [n for n in names if n.startswith(("tests/", "tools/", "bench/", "docs/")) or "__pycache__" in n]


def test_every_file_of_the_package_is_in_the_wheel(wheel):
    """Code and data alike: what git tracks under lakehouse_platform/ is what a team gets."""
    missing = sorted(set(tracked("lakehouse_platform")) - set(wheel.namelist()))
    assert missing == [], f"left out of the wheel: {missing}"


def data_files() -> dict[str, Path]:
    """Every data file the code opens, by the constant (or directory) that names it."""
    from lakehouse_platform.artifacts import runtime
    from lakehouse_platform.lab import commands as lab_commands
    from lakehouse_platform.policies import config as policies
    from lakehouse_platform.services import operations_support as support
    from lakehouse_platform.services.flink import artifact as flink
    from lakehouse_platform.services.kafka import artifact as kafka
    from lakehouse_platform.services.kafka_connect import artifact as connect
    from lakehouse_platform.services.registry import registry
    from lakehouse_platform.services.rest_fixture import artifact as fixture

    found = {"operations lock": runtime.OPERATIONS_LOCK, "operations Dockerfile":
             support.OPERATIONS_CONTEXT / support.OPERATIONS_DOCKERFILE,
             "operations .dockerignore": support.OPERATIONS_CONTEXT / ".dockerignore",
             "PulumiPolicy.yaml": policies.PACK_DIR / "PulumiPolicy.yaml", "enforcement.yaml": policies.ENFORCEMENT_FILE,
             "flink jar lock": flink.MSF_LOCK_PATH.with_name("flink.jars.json"), "flink msf lock": flink.MSF_LOCK_PATH,
             "flink job": flink.JOB_SOURCE, "rest fixture launcher": fixture.LAUNCHER_SOURCE,
             "debezium lock": connect.DEBEZIUM_LOCK, "iceberg sink lock": connect.ICEBERG_LOCK,
             "msk clients lock": connect.MSK_CLIENTS_LOCK, "msk provider": connect.PROVIDER_SOURCE,
             "probes pytest.ini": PACKAGE_DIR / "probes" / "pytest.ini",
             **{f"kafka lock {v}": path for v, path in kafka.LOCKS.items()},
             **{f"lab script {p.name}": p for p in lab_commands.SCRIPTS.glob("*.sh")}}
    for definition in registry():  # each built lab image's Dockerfile and scripts
        if definition.docker.image is not None:
            for path in (definition.docker.image.dockerfile, *definition.docker.image.scripts):
                found[f"{definition.name} image {path.name}"] = path
    for path in (PACKAGE_DIR / "services" / "kafka_connect").glob("*.sql"):
        found[f"bookshop {path.name}"] = path
    return found


def test_every_data_file_the_code_opens_is_in_the_package_and_in_the_wheel(wheel):
    names = set(wheel.namelist())
    files = data_files()
    outside = {what: path for what, path in files.items() if not path.is_relative_to(PACKAGE_DIR)}
    assert outside == {}, "read from outside the package (a checkout's path): not in any wheel"
    missing = {what: str(path.relative_to(PACKAGE_PARENT)) for what, path in files.items()
               if str(path.relative_to(PACKAGE_PARENT)) not in names}
    print(f"\n== {len(files)} data files the code names, all in the wheel: {not missing}")
    assert missing == {}
    assert len(files) > 25


def test_the_sdist_holds_the_package_and_its_build_config_not_the_tests(source, tmp_path):
    from setuptools import build_meta

    for name in tracked("MANIFEST.in", "tests/test_version.py"):  # setuptools adds tests/test*.py unless told not to
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes((REPO_ROOT / name).read_bytes())
    done = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                           "print(build_meta.build_sdist(sys.argv[1]))", str(tmp_path)],
                          cwd=source, capture_output=True, text=True, check=True, timeout=600)
    assert build_meta is not None
    with tarfile.open(tmp_path / done.stdout.strip().splitlines()[-1]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"pyproject.toml", "lakehouse_platform/cli.py", "lakehouse_platform/runtime/image/operations.lock"} <= names
    assert not [n for n in names if n.startswith(("tests/", "bench/", "tools/"))]
