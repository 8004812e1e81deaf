"""This repository's own Pulumi program: one user of the package among others.

One platform, declared by the stack's ``lakehouse:platform`` config, with the outputs every stack documents. Its
children keep the names and places 0.4.0 gave them (``child_names="bare"``), so the stacks this repository has
deployed keep every resource. A team's program is the same few lines (examples/team-project).
"""

from lakehouse_platform.component import LakehousePlatform, export, platform_config

spec = platform_config()
platform = LakehousePlatform(spec.name, spec, child_names="bare")
export(platform)
