"""Entry point of the Pulumi program: the project root is the program directory (see Pulumi.yaml).

The program itself is infra/program.py. Keeping the entry at the root makes every tool resolve
the project virtualenv (.venv) the same way: the language host, and the dynamic-provider host
that runs the native target's LocalService.
"""

from infra.program import main

main()
