"""The ownership table as a ``CODEOWNERS`` section for the stack files.

Every team that approves some layer of a stack (its layers' ``approvers``, ``owner`` resolved to the layer's
owner and the owners of its services and declared tables) becomes a code owner of that stack file, by its handle
(``review.handles``), so a pull request that edits the file asks them all for a review. GitHub is satisfied by
one code owner's approval; that every approver of each changed layer approved is the change review's exit code
in CD (``lakehouse review --base ...``), which the branch protection requires as a check.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from lakehouse_platform.config import load_stack
from lakehouse_platform.model import OWNER_APPROVER, PlatformSpec

BEGIN = ("# BEGIN lakehouse-platform change review (lakehouse review --codeowners: regenerate, "
         "do not edit)")
END = "# END lakehouse-platform change review"


def stack_files(root: Path) -> list[str]:
    """The stack files in the repository at ``root`` (tracked by git; every ``Pulumi.*.yaml`` outside git)."""
    listed = subprocess.run(["git", "ls-files", "--", "Pulumi.*.yaml"], cwd=root, capture_output=True, text=True,
                            check=False)
    names = listed.stdout.split() if listed.returncode == 0 else []
    return sorted(names or (p.name for p in root.glob("Pulumi.*.yaml")))


def approving_teams(spec: PlatformSpec) -> list[str]:
    """Every team that approves a change to some layer of the stack, in layer order."""
    teams: list[str] = []
    for layer, contract in spec.layers.items():
        for approver in contract.approvers:
            if approver != OWNER_APPROVER:
                teams.append(approver)
                continue
            teams.append(contract.owner)
            teams.extend(spec.owner_of(name) for name, svc in spec.enabled_services().items() if svc.layer is layer)
            if layer.value == "orchestration":
                teams.extend(table.owner for table in spec.tables)
    return list(dict.fromkeys(teams))


def section(root: Path, files: list[str] | None = None) -> str:
    """The CODEOWNERS section for ``files`` (default: every stack file of the repository)."""
    lines = [BEGIN,
             "# Each stack file's owners are the teams that approve some layer of it; every approver of each changed",
             "# layer must approve (CD checks it: lakehouse review --base ... exits 3 while one is",
             "# missing)."]
    for name in files or stack_files(root):
        stack = name.removeprefix("Pulumi.").removesuffix(".yaml")
        spec = load_stack(stack, root)
        teams = approving_teams(spec)
        handles = [spec.review.handles[t] for t in teams if t in spec.review.handles]
        unknown = [t for t in teams if t not in spec.review.handles]
        if handles:
            lines.append(f"/{name} {' '.join(dict.fromkeys(handles))}")
        if unknown:
            lines.append(f"# /{name}: no handle for {', '.join(unknown)} (set review.handles.<team> in {name})")
    lines.append(END)
    return "\n".join(lines) + "\n"
