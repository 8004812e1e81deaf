"""The runtime contract (pyproject ``[tool.importlinter]``, id ``runtime``): what the operations image and the native
processes run imports only runtime code. Its forbidden list must name every top-level module of the package but the
runtime, or a new module would be importable from runtime code unchecked."""

from __future__ import annotations

import tomllib

from tests.support import REPO_ROOT


def test_the_runtime_contract_forbids_every_module_but_the_runtime() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "runtime"]
    package = REPO_ROOT / "lakehouse_platform"
    top = {f"lakehouse_platform.{p.stem}" for p in package.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    forbidden = set(contract["forbidden_modules"])
    assert top - {"lakehouse_platform.runtime", "lakehouse_platform.services"} == {
        m for m in forbidden if not m.startswith("lakehouse_platform.services")}
    # The services' program side: every module of the services package and of each service package (a service's own
    # runtime.py is the source module itself, which import-linter never forbids to itself).
    assert {"lakehouse_platform.services.*", "lakehouse_platform.services.*.*"} <= forbidden
    assert set(contract["source_modules"]) == {"lakehouse_platform.runtime", "lakehouse_platform.services.*.runtime"}
