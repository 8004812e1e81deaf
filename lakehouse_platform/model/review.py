"""How a stack's changes are reviewed: the handles its teams have where pull requests are reviewed.

Who must approve a change is each layer's ``approvers`` (``lakehouse_platform.model.layers``); this section maps the
team names
used there (and as owners) to the handles a code host knows, for the ``CODEOWNERS`` section and for turning a pull
request's approvals into teams (``lakehouse review --codeowners`` / ``--handles``).
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from lakehouse_platform.model.base import Strict

#: A GitHub user (@name), a team (@org/team) or an e-mail address: what CODEOWNERS accepts as an owner.
_HANDLE = re.compile(r"^(@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:/[A-Za-z0-9][A-Za-z0-9._-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+)$")


class ReviewSpec(Strict):
    """Change review: each team's handle on the code host."""

    handles: dict[str, str] = Field(
        default_factory=dict,
        description="Team name (as approvers and owners name it) -> its handle where pull requests are reviewed: a "
                    "GitHub team (@org/team), a user (@user) or an e-mail; the CODEOWNERS section and the CD "
                    "pipeline's approvals read it.")

    @field_validator("handles")
    @classmethod
    def _handles(cls, value: dict[str, str]) -> dict[str, str]:
        for team, handle in value.items():
            if not team.strip():
                raise ValueError("a team name is empty; name the team as layers' approvers and owners do")
            if not _HANDLE.match(handle):
                raise ValueError(f"{team}: {handle!r} is not a handle; use @org/team, @user or an e-mail address")
        return value
