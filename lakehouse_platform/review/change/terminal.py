"""Printing for a terminal of any width: a line of a block wrapped with a hanging indent, no padding after it."""

from __future__ import annotations

import textwrap

from rich.console import Console


def print_wrapped(console: Console, text: str, indent: int = 2) -> None:
    """One line of a block, wrapped at the console's width with a hanging indent (no padding after the words)."""
    console.print(textwrap.fill(text, width=max(console.width, 40), initial_indent=" " * indent,
                                subsequent_indent=" " * (indent + 2), break_on_hyphens=False),
                  markup=False, highlight=False, soft_wrap=True)
