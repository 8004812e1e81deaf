"""The maintenance scheduler's constants."""

from __future__ import annotations

NAME = "maintenance-scheduler"


ROLE = "maintenance"
