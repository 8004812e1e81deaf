"""Entry point of the Pulumi program (Pulumi.yaml: main: infra/)."""

import sys
from pathlib import Path

# Pulumi runs this file as a script; make the project root importable so `infra.*` resolves.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infra.program import main  # noqa: E402

main()
