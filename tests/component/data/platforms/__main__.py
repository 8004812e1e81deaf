"""A program with several platforms: the test's config (``test:platforms``) lists each one's name, config key and
child names, in the order the program declares them."""

import pulumi

from lakehouse_platform.component import LakehousePlatform, platform_config

for entry in pulumi.Config("test").require_object("platforms"):
    platform = LakehousePlatform(entry["name"], platform_config(entry["key"]),
                                 child_names=entry.get("child_names", "prefixed"))
    pulumi.export(entry["name"], platform.outputs)
