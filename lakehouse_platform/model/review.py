"""How a stack's changes are reviewed: the handles its teams have where pull requests are reviewed, and who must
approve a change of rights (``rights``: a widening, a narrowing).

Who must approve a change is each layer's ``approvers`` (``lakehouse_platform.model.layers``); this section maps the
team names
used there (and as owners) to the handles a code host knows, for the ``CODEOWNERS`` section and for turning a pull
request's approvals into teams (``lakehouse review --codeowners`` / ``--handles``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, field_validator

from lakehouse_platform.model.base import Strict
from lakehouse_platform.model.layers import Layer, approver_list

#: A GitHub user (@name), a team (@org/team) or an e-mail address: what CODEOWNERS accepts as an owner.
_HANDLE = re.compile(r"^(@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:/[A-Za-z0-9][A-Za-z0-9._-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+)$")


#: In a rights rule: the team the identity whose rights change acts for (``identities.<name>.team``; the platform
#: where it names none).
IDENTITY_TEAM = "team"


class RightsRuleSpec(Strict):
    """Who must approve a change of what an identity may do (``review.rights``), by its direction.

    Applied on top of the governance layer's approvers. A widening (any identity gains read, write or manage on any
    namespace, or a new identity) exposes data: security approves it, whatever a stack's governance approvers say.
    A narrowing (rights only lost) exposes nothing but fails closed on the team that loses them: that team approves
    it, so no pipeline is cut off without its owner knowing, and the platform, which runs the enforcement points.
    """

    LAYER: ClassVar[Layer] = Layer.GOVERNANCE  # a change of the rule is the governance layer's (change review)

    widening: list[str] = Field(
        default_factory=lambda: ["security", "platform"], min_length=1,
        description="Who approves a change that gives any identity a right it did not have (a new identity, a new "
                    f"grant): team names, '{IDENTITY_TEAM}' for the team the identity acts for. Must name security.")
    narrowing: list[str] = Field(
        default_factory=lambda: [IDENTITY_TEAM, "platform"], min_length=1,
        description="Who approves a change that only takes rights away: team names, and "
                    f"'{IDENTITY_TEAM}' for the team each losing identity acts for (its pipelines fail closed).")

    @field_validator("widening", "narrowing")
    @classmethod
    def _teams(cls, value: list[str]) -> list[str]:
        return approver_list(value, f"'{IDENTITY_TEAM}', the team the identity acts for")

    @field_validator("widening")
    @classmethod
    def _security_widens(cls, value: list[str]) -> list[str]:
        if "security" not in value:
            raise ValueError("a widening of rights exposes data: security must approve it (add 'security')")
        return value


class ReviewSpec(Strict):
    """Change review: each team's handle on the code host, and who approves a change of rights."""

    handles: dict[str, str] = Field(
        default_factory=dict,
        description="Team name (as approvers and owners name it) -> its handle where pull requests are reviewed: a "
                    "GitHub team (@org/team), a user (@user) or an e-mail; the CODEOWNERS section and the CD "
                    "pipeline's approvals read it.")
    rights: RightsRuleSpec = Field(
        default_factory=RightsRuleSpec,
        description="Who approves a change of rights: a widening (security and platform by default) or a narrowing "
                    "(the team that loses the right, and platform).")

    @field_validator("handles")
    @classmethod
    def _handles(cls, value: dict[str, str]) -> dict[str, str]:
        for team, handle in value.items():
            if not team.strip():
                raise ValueError("a team name is empty; name the team as layers' approvers and owners do")
            if not _HANDLE.match(handle):
                raise ValueError(f"{team}: {handle!r} is not a handle; use @org/team, @user or an e-mail address")
        return value
