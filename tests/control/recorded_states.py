"""The state a supported earlier release recorded, trimmed to what the adoption tests read.

``python -m tests.control.recorded_states <version> <exported.json> <state dir> <checkout>`` writes
``tests/control/data/recorded-<version>.json`` from ``pulumi stack export --show-secrets`` of a native stack that
release deployed (its isolated ``upgrade`` stack): every resource's type and URN, and each dynamic resource's id,
inputs and outputs, with its recorded provider cut to a marker (the blobs are 30-100 KB each; only their being another
release's matters), every secret's value redacted (its shape kept: a dynamic provider sees secrets unwrapped), code
and rendered files cut to their names, the stack's state directory written as ``@STATE@`` (the tests put a temporary
directory there) and the release's checkout as ``@CHECKOUT@``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SECRET_SIG = "4dabf18193072939515e22adb298388d"
STATE = "@STATE@"
CHECKOUT = "@CHECKOUT@"
DATA = Path(__file__).with_name("data")


def _trim(value: Any, places: dict[str, str]) -> Any:
    if isinstance(value, dict):
        if value.get(SECRET_SIG) and "plaintext" in value:  # a secret: its shape, its values redacted
            return _redact(_trim(json.loads(value["plaintext"]), places))
        return {_trim(key, places): _trim(item, places) for key, item in value.items()}
    if isinstance(value, list):
        return [_trim(item, places) for item in value]
    if isinstance(value, str):
        for place, marker in places.items():
            value = value.replace(place, marker)
    return value


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _redact(item) for key, item in value.items()}
    return "redacted" if isinstance(value, str) else value


def trim(deployment: dict[str, Any], release: str, state_dir: str, checkout: str) -> dict[str, Any]:
    places = {state_dir: STATE, checkout: CHECKOUT}
    resources = []
    for resource in deployment["resources"]:
        kept = {key: _trim(resource[key], places) for key in ("urn", "type", "id") if key in resource}
        if not resource["type"].startswith("pulumi-python:dynamic"):  # the stack, the layers, the default provider
            resources.append(kept)
            continue
        for section in ("inputs", "outputs"):
            props = _trim(resource.get(section) or {}, places)
            if "__provider" in props:
                props["__provider"] = f"recorded by {release}"
            for key in ("sources", "files"):  # code and rendered files: their names (the content is not read)
                if isinstance(props.get(key), dict):
                    props[key] = {name: "# content" for name in props[key]}
            kept[section] = props
        resources.append(kept)
    return {"release": release, "resources": resources}


if __name__ == "__main__":
    release, exported, state_dir, checkout = sys.argv[1:5]
    trimmed = trim(json.loads(Path(exported).read_text()), release, state_dir.rstrip("/"), checkout.rstrip("/"))
    (DATA / f"recorded-{release}.json").write_text(json.dumps(trimmed, indent=1, sort_keys=True) + "\n")
