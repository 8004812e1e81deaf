"""Operating stacks from Python: the Automation API workspace, isolated stacks, and the CLI commands."""
