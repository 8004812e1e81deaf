"""What runs, read from the running thing: the readers the version manifest probe shares (``test_manifest``).

What the target declares it runs (``declared_versions``), and what is read from inside a service through
the target (``support.control``): natively its processes by pid on this host, in the lab inside its
container (its /proc, ``docker exec``, ``docker cp``).
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from pathlib import Path

from platform_tests.support import control
from platform_tests.support.stack import Stack

OBTAINED_ALIASES = {"iceberg-spark-runtime": "iceberg"}  # native.obtained_versions key -> manifest name


def declared_versions(stack: Stack) -> dict[str, tuple[str, str]]:
    """``{component: (version, reason)}``: what the target declares it runs, where it says so.

    Sources, first wins: ``native.obtained_versions`` (+ ``native.notes`` for the reason) as the native
    target exports them; ``clients.obtained_versions``, what this host's clients run on every target (DuckDB
    1.4.4 where the chapter pins 1.5.5); ``lab_images``, the artifact each built lab image runs; the stack file's ``native_version`` / ``engines.duckdb_native``; the
    native artifact cache's manifest (for outputs that predate ``obtained_versions``).
    """
    declared: dict[str, tuple[str, str]] = {}
    notes = stack.native.get("notes") or {}

    def reason_for(name: str, default: str) -> str:
        found = [n for n in notes.get(name, []) if "pin" in n or "newest" in n or "resolves" in n]
        return "; ".join(found) or default

    native = stack.native.get("obtained_versions") or stack.native.get("versions") or {}
    clients = stack.clients.get("obtained_versions") or {}
    for name, version in [*native.items(), *clients.items()]:
        key = OBTAINED_ALIASES.get(name, name)
        if key in declared:
            continue
        if isinstance(version, dict):
            declared[key] = (str(version.get("version")), str(version.get("reason") or reason_for(name, "")))
        elif version:
            declared[key] = (str(version), reason_for(name, "obtained by the native target"))
    # The lab's built images run the native artifact each was built from (``lab_images``, kind built).
    for name, image in (stack.outputs.get("lab_images") or {}).items():
        if image.get("kind") == "built" and image.get("version") and name not in declared:
            declared[name] = (str(image["version"]), str(image.get("notes") or "") or
                              f"lab.images: built: {image.get('image')} from the native artifact "
                              f"{image['version']} (pin {image.get('pin')})")
    if stack.target != "native":
        return declared
    try:
        from infra.config import load_stack

        spec = load_stack(stack.name or "native")
        for name, svc in spec.enabled_services().items():
            if svc.native_version and svc.native_version != svc.version:
                version, reason = declared.get(name, (svc.native_version, ""))
                declared[name] = (version, reason if "pin" in reason else
                                  f"native_version {svc.native_version} in the spec; pin {svc.version} elsewhere")
        if spec.engines.duckdb != spec.engines.duckdb_native:
            version, _ = declared.get("duckdb", (spec.engines.duckdb_native, ""))
            declared["duckdb"] = (version, f"engines.duckdb_native: newest DuckDB with extensions on PyPI; "
                                           f"{spec.engines.duckdb} elsewhere")
    except Exception:  # noqa: BLE001 - no stack file (outputs from elsewhere): the artifacts still tell
        pass
    for name, entry in (stack.native.get("artifacts") or {}).items():
        if name not in declared and entry.get("version"):
            declared[name] = (entry["version"], "native artifact: obtained version")
    return declared




def trino_home(ctl: control.ServiceControl) -> str | None:
    """Trino's installation (the directory with ``lib/`` and ``plugin/``), from its processes' classpath."""
    candidates: list[str] = []
    for process in ctl.processes("trino"):
        for arg in re.split(r"[\s:=]+", process.args):
            if "/lib/" in arg and "trino" in arg:
                candidates.append(arg.rsplit("/lib/", 1)[0])
    for home in dict.fromkeys(candidates):
        try:
            if "plugin" in ctl.list_dir("trino", home):
                return home
        except (control.ServiceControlError, OSError):
            continue
    return None




def jar_build_version(jar: Path) -> str | None:
    """The Iceberg build a jar was made from, as the jar records it (``iceberg-build.properties``)."""
    with zipfile.ZipFile(jar) as archive:
        text = archive.read("iceberg-build.properties").decode()
    found = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return found.get("git.build.version")


def read_fixture(ctl: control.ServiceControl) -> tuple[str | None, str]:
    """The fixture's runtime jar on its process's classpath (the fixture reports no version over HTTP)."""
    processes = ctl.processes("rest-fixture")
    where = ctl.describe("rest-fixture")
    match = re.search(r"iceberg-open-api-(\d+(?:\.\d+)+)\.jar", " ".join(p.args for p in processes))
    if match:
        return match.group(1), f"classpath of {where} (iceberg-open-api-{match.group(1)}.jar)"
    # A jar named without its version (the images' iceberg-rest-adapter.jar): the Iceberg build it records.
    for process in processes:
        args = process.args.split()
        if "-jar" in args[:-1]:
            jar = args[args.index("-jar") + 1]
            path = jar if jar.startswith("/") else f"{process.cwd.rstrip('/')}/{jar}"
            with tempfile.TemporaryDirectory() as tmp:
                version = jar_build_version(ctl.fetch_file("rest-fixture", path, Path(tmp) / "fixture.jar"))
            return version, f"iceberg-build.properties of {path} (-jar of {where})"
    raise RuntimeError(f"no iceberg-open-api jar and no -jar on the classpath of {where}")


def read_kafka(ctl: control.ServiceControl) -> tuple[str | None, str]:
    """The broker's version from its process's classpath (kafka_2.13-<version>.jar): the broker has no HTTP API."""
    args = " ".join(p.args for p in ctl.processes("kafka")).split()
    where = ctl.describe("kafka")
    pattern = r"kafka_2\.13-(\d+(?:\.\d+)+)\.jar"
    match = re.search(pattern, " ".join(args))
    if not match:  # a wildcard classpath: the jar is in the directory it names
        for arg in args:
            for entry in arg.strip("'\"").split(":"):
                if entry.endswith("/*"):
                    jars = [n for n in ctl.list_dir("kafka", entry[:-2]) if re.fullmatch(pattern, n)]
                    match = match or (re.search(pattern, jars[0]) if jars else None)
    if not match:
        raise RuntimeError(f"no kafka_2.13 jar on the classpath of {where}")
    return match.group(1), f"classpath of {where} (kafka_2.13-{match.group(1)}.jar)"
