"""A service is one package: no module outside a service's package (and the registry) names it or imports it.

Read from the sources (``ast``), against the registry: every service name (``ServiceDefinition.name``, jobs and
sidecars included) used as a string, and every import of a service package's module (``import``, ``from``,
``Lazy("module:function")`` and ``importlib`` strings), in ``lakehouse_platform``, ``policies`` and ``lakehouse_platform/probes``. Allowed,
and nothing else (docs/adr/0009-services-meet-by-capability.md):

- inside the service's own package, and in ``lakehouse_platform/services/registry.py`` (its one line in ``MODULES``);
- a declared dependency: another service's name in a ``depends_on`` list of a default spec, or as the value of a
  definition's ``job_of=`` / ``fronts=`` (whom it serves); and the packages a package declares it builds on
  (``USES`` in its ``definition``: Connect runs on Kafka's own classpath), whose names and modules it may use;
- a string that only spells like a service on a line that says so (``# not the service: ...``), e.g. the
  PostgreSQL role ``postgres`` or the host's Spark client ``spark``.

Tests and benchmarks drive a service's modules directly and are not read.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakehouse_platform.services.registry import MODULES, registry
from tests.support import REPO_ROOT

READ = ("lakehouse_platform",)
REGISTRY_MODULE = "lakehouse_platform/services/registry.py"
MARKER = "not the service"
#: Keyword arguments of a definition that name whom it serves: a declared dependency.
DECLARING_KEYWORDS = ("job_of", "fronts")
#: The service packages: each registry line names its package's ``definition`` module.
PACKAGES = tuple(module.removesuffix(".definition") for module in MODULES)


@dataclass(frozen=True)
class Use:
    """One place a module outside a service's package names it or imports its module."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def package_dir(module: str) -> str:
    """``lakehouse_platform.services.trino`` -> ``lakehouse_platform/services/trino``."""
    return module.replace(".", "/")


def owners(root: Path) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """service name -> the package that defines it; package -> the packages it declares it uses (``USES``)."""
    names: dict[str, str] = {}
    uses: dict[str, tuple[str, ...]] = {}
    for module, package in zip(MODULES, PACKAGES, strict=True):
        defined = importlib.import_module(module)
        for definition in defined.SERVICES:
            names[definition.name] = package
        uses[package] = tuple(getattr(defined, "USES", ()))
    return names, uses


def module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def owning_package(path: str) -> str | None:
    """The service package a source file belongs to, if any."""
    module = module_of(path)
    return next((m for m in PACKAGES if module == m or module.startswith(m + ".")), None)


def imported_package(target: str) -> str | None:
    """The service package an imported module (or ``module:function`` reference) lies in, if any."""
    module = target.split(":", 1)[0]
    return next((m for m in PACKAGES if module == m or module.startswith(m + ".")), None)


def declared_context(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are declared dependencies: ``depends_on`` entries, ``job_of=``/``fronts=``."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "depends_on":
                    allowed.update(id(n) for n in ast.walk(value))
        if isinstance(node, ast.keyword) and node.arg in DECLARING_KEYWORDS:
            allowed.update(id(n) for n in ast.walk(node.value))
    return allowed


def uses_outside(root: Path, files: list[str]) -> list[Use]:
    """Every use of a service's name or module outside its package, the registry and what is declared."""
    names, uses = owners(root)
    found: list[Use] = []
    for path in files:
        if path == REGISTRY_MODULE:
            continue
        source = (root / path).read_text()
        lines = source.splitlines()
        tree = ast.parse(source, path)
        own = owning_package(path)
        mine = {own, *uses.get(own or "", ())} - {None}
        allowed = declared_context(tree)
        marked = {number for number, text in enumerate(lines, start=1) if MARKER in text}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in names and names[node.value] not in mine and id(node) not in allowed \
                        and node.lineno not in marked:
                    found.append(Use(path, node.lineno, f"names the service {node.value!r} "
                                                        f"(defined in {names[node.value]})"))
                targets = [node.value] if node.value.startswith("lakehouse_platform.services.") else []
            else:
                continue
            for target in targets:
                package = imported_package(target)
                if package is not None and package not in mine and node.lineno not in marked:
                    found.append(Use(path, node.lineno, f"uses {target}, a module of {package}"))
    return sorted(set(found), key=lambda u: (u.path, u.line, u.what))


def tracked_sources(root: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--", *(f"{d}/*.py" for d in READ)], cwd=root, capture_output=True,
                            text=True, check=True).stdout.split()
    return sorted(p for p in listed if (root / p).exists())


def test_no_module_outside_a_services_package_names_it_or_imports_it() -> None:
    found = uses_outside(REPO_ROOT, tracked_sources(REPO_ROOT))
    assert not found, ("a service is one package: these name a service or use its module outside its package and "
                       "the registry (reach it by capability, declare the dependency, or mark a homonym "
                       f"'# {MARKER}: ...'):\n" + "\n".join(map(str, found)))


def test_the_check_sees_a_name_an_import_and_a_lazy_reference_and_allows_the_declared(tmp_path: Path) -> None:
    """The check itself, on a made-up module: each way of naming a service outside its package is found."""
    service = registry().names()[0]
    package = owning_package(package_dir(PACKAGES[0]) + "/__init__.py")
    assert package is not None
    (tmp_path / "lakehouse_platform").mkdir()
    (tmp_path / "lakehouse_platform" / "elsewhere.py").write_text(
        f"import {package}.config\n"
        f"from {package}.definition import SERVICES\n"
        f"REF = '{package}.aws:build'\n"
        f"NAMED = {service!r}\n"
        f"HOMONYM = {service!r}  # {MARKER}: a role of the same spelling\n"
        f"DEFAULT = {{'depends_on': [{service!r}]}}\n"
        f"DEFINED = dict(job_of={service!r})\n")
    found = [u.what for u in uses_outside(tmp_path, ["lakehouse_platform/elsewhere.py"])]
    assert found == [f"uses {package}.config, a module of {package}",
                     f"uses {package}.definition, a module of {package}",
                     f"uses {package}.definition.SERVICES, a module of {package}",
                     f"uses {package}.aws:build, a module of {package}",
                     f"names the service {service!r} (defined in {package})"], found


@pytest.mark.parametrize("path", ["lakehouse_platform/services/registry.py"])
def test_the_registry_may_name_every_package(path: str) -> None:
    assert uses_outside(REPO_ROOT, [path]) == []
