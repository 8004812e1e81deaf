"""Change review by owner: what a pull request changes, whose layers it touches, and who must approve it.

``lakehouse review --base <file or rev:path> --head <file> [--preview preview.json] --approved-by
teams``
(``lakehouse_platform.review`` is the command line). From two stack files, each changed config key; from a
``pulumi preview --json``, each resource the update would create, update, replace or delete. Each change names
its layer (read from the models: ``keys``), its owner, the layer's change control, what it does while it
happens and what "down" then means, and the teams that must approve it (each layer's ``approvers``, the base's
rules). The verdict gates CD: ``EXIT_APPROVALS_MISSING`` while any approval is missing.

Modules: ``sources`` (reading a stack file or a revision of it), ``keys`` (the config diff with each key's
layer), ``preview`` (a preview's steps), ``effects`` (what a change does, what is down meanwhile),
``approvals`` (who must approve, and the verdict), ``render`` (terminal, markdown, JSON), ``terminal``
(wrapping at any width), ``codeowners`` (the ownership table as a CODEOWNERS section).
"""

from __future__ import annotations

#: Every change is approved (or there is none).
EXIT_APPROVED = 0
#: Bad input: an invalid stack config, an unreadable file or revision, a preview that is not Pulumi's JSON.
EXIT_BAD_INPUT = 2
#: A change needs an approval that was not given (``--approved-by``): CD stops here.
EXIT_APPROVALS_MISSING = 3
