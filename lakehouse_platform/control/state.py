"""The operator's side of a state directory's owner (``lakehouse_platform.targets.state_owner``): who this checkout's
stack is, the refusal ``make down`` gives a stack that is not the owner, and ``claim``, the documented way to take
a directory over on purpose (a moved checkout whose backend moved with it, or a deliberate takeover)."""

from __future__ import annotations

import os
from pathlib import Path

from lakehouse_platform.config import ConfigError, load_stack
from lakehouse_platform.control import toolchain
from lakehouse_platform.control.workspace import pulumi_env
from lakehouse_platform.model import Target
from lakehouse_platform.paths import project_root, stack_state_dir
from lakehouse_platform.targets.state_owner import Identity, claim, normal_backend, project_name, refusal


class NotTheOwner(RuntimeError):
    """The stack's state directory records another stack: the message names it and the way to take it over."""


def identity(stack: str) -> Identity:
    """The project's stack as its Pulumi commands see it: ``Pulumi.yaml``'s project, the stack, the backend."""
    backend = pulumi_env(stack).get("PULUMI_BACKEND_URL") or os.environ.get("PULUMI_BACKEND_URL")
    if not backend:
        tool = toolchain.current()
        backend = toolchain.logged_in(tool.home if tool is not None else toolchain.PROJECT_HOME)
    return Identity(project_name(project_root()), stack, normal_backend(backend))


def directory(stack: str) -> Path | None:
    """The stack's state directory, for a stack that keeps one on this host (native, lab); None otherwise."""
    try:
        spec = load_stack(stack)
    except ConfigError:
        return None  # the program says what is wrong with the config
    if spec.target is Target.AWS:
        return None
    return stack_state_dir(stack, spec.state_dir)


def check(stack: str) -> None:
    """Refuse (``NotTheOwner``) when the stack's state directory is another stack's."""
    found = directory(stack)
    why = refusal(found, identity(stack)) if found is not None else None
    if why:
        raise NotTheOwner(why)


def take_over(stack: str) -> tuple[Path, Identity, Identity | None]:
    """Record this checkout's stack as the owner of its state directory: (directory, new owner, former owner)."""
    found = directory(stack)
    if found is None:
        raise NotTheOwner(f"stack {stack} keeps no state directory on this host (aws, or an invalid config)")
    me = identity(stack)
    return found, me, claim(found, me)
