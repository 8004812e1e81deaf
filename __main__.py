"""Entry point of the Pulumi program: the project root is the program directory (see Pulumi.yaml).

The program itself is lakehouse_platform/program.py. Keeping the entry at the root makes every tool resolve
the project virtualenv (.venv) the same way: the language host, and the dynamic-provider host
that runs the native target's LocalService.
"""

from lakehouse_platform.program import main

main()
