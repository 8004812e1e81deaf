"""What the unit tests and the benchmarks share: the Pulumi-mocks program runner (``harness``), the stacks' configs
(``stacks``), look-ups in a rendered graph (``aws_graph``, ``rendered``), the policy pack's view of a stack
(``policy_support``), the AWS emulator (``aws_emulator``, ``rendered_in_moto``) and the job scripts' stand-ins
(``job_scripts``).

Imported as ``tests.support.<module>`` (the project is installed editable with its ``tests`` package), never through
a ``sys.path`` entry.
"""

from pathlib import Path

#: This repository's checkout (the tests run from it; the package may be installed elsewhere).
REPO_ROOT = Path(__file__).resolve().parents[2]
