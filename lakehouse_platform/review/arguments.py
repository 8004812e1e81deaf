"""The review's command-line arguments (``lakehouse review``), apart from the review so that building the command line
imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The review's arguments (``lakehouse review``)."""
    parser.add_argument("--stack", help="the stack to review (reads Pulumi.<stack>.yaml of the project)")
    parser.add_argument("--format", choices=("table", "json", "markdown", "svg"), default="table",
                        help="how to print it (default: table); svg: the stack's pictures drawn from its model "
                             "(layers, services, flows, governance)")
    parser.add_argument("--diff", metavar="OTHER", help="show what differs from another stack")
    parser.add_argument("--base", metavar="REF", help="change mode: the stack file before the change: a file or "
                                                      "REV:PATH (e.g. origin/main:Pulumi.cloud.yaml)")
    parser.add_argument("--head", metavar="REF", help="change mode: the stack file after it (default: "
                                                      "Pulumi.<stack>.yaml)")
    parser.add_argument("--preview", metavar="FILE", help="change mode: `pulumi preview --json` of the head ('-': "
                                                          "stdin): the resources it creates, updates, replaces or "
                                                          "deletes")
    parser.add_argument("--approved-by", action="append", metavar="TEAMS",
                        help="change mode: teams that approved, comma-separated (repeatable)")
    parser.add_argument("--codeowners", action="store_true",
                        help="print the ownership table as a CODEOWNERS section for the stack files")
    parser.add_argument("--handles", action="store_true", help="print the stack's teams' handles (review.handles)")
    # Where the stack files are, when not in the project (lakehouse -C DIR is the way for users).
    parser.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
