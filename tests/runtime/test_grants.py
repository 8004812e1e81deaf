"""The one grants rule (lakehouse_platform/runtime/grants.py): every enforcer decides with it, none writes it again."""

from __future__ import annotations

import ast

from lakehouse_platform.model import governance
from lakehouse_platform.runtime import catalog_requests, grants
from tests.support import REPO_ROOT

GRANTS = {"*": ("read", "write"), "finance": ("read",), "closed": ()}


def test_a_namespace_follows_its_top_levels_entry_else_every_namespaces() -> None:
    assert grants.may(GRANTS, "write", "shop") and grants.may(GRANTS, "write", ["shop", "eu"])
    assert grants.may(GRANTS, "read", "finance.q1") and not grants.may(GRANTS, "write", ("finance", "q1"))
    assert not grants.may(GRANTS, "read", "closed"), "a named entry replaces '*': [] closes the namespace"
    assert not grants.may({}, "read", "shop") and tuple(grants.held(GRANTS, "closed")) == ()


def test_the_model_and_the_gate_decide_with_the_same_rule() -> None:
    for namespace in ("shop", "finance", "finance.q1", "closed"):
        for action in ("read", "write", "manage"):
            expected = grants.may(GRANTS, action, namespace)
            assert governance.may(GRANTS, action, namespace) is expected  # type: ignore[arg-type]
            need = catalog_requests.Need(action, tuple(namespace.split(".")))
            assert catalog_requests.allowed(GRANTS, need) is expected


def test_no_other_module_looks_a_namespace_up_in_grants_itself() -> None:
    """The rule's lookup (an entry, else ``*``'s) is written once: a second copy could drift from it."""
    copies = []
    for path in sorted((REPO_ROOT / "lakehouse_platform").rglob("*.py")):
        if (path.name == "grants.py" and path.parent.name == "runtime") or "probes" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and node.args and ast.unparse(node.args[0]) in ("EVERY_NAMESPACE", "'*'")):
                copies.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert not copies, f"the grants rule written again (use lakehouse_platform.runtime.grants): {copies}"
