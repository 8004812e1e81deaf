"""What the target declares it runs (``declared_versions``), which the version manifest probe holds the running
versions against (``test_manifest``; each service's package reads its own: ``ProbeHooks.version``).
"""

from __future__ import annotations

from lakehouse_platform.probes.support.stack import Stack

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
        from lakehouse_platform.config import load_stack

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
