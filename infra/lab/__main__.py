"""``python -m infra.lab``: the lab's base image, its images, and its containers on a Docker engine.

    [--stack lab] [--set KEY=VALUE]... base          lab.base_image from Debian's mirror unless present (make lab-base)
    [--stack lab] [--set KEY=VALUE]... images build  the operations image and, with lab.images: built, every
                                                     service image (make lab-images)
    [--stack lab] [--set KEY=VALUE]... images tags   the tag each service runs, without building
    [--stack lab] [--set KEY=VALUE]... run [--keep]  the program's rendered containers, in its order, to healthy
                                                     (make lab-run)

The engine is DOCKER_HOST's (``eval "$(scripts/docker-engine.sh env)"``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from infra.paths import PROJECT_ROOT
from infra.spec import PlatformSpec


def _spec(stack: str, overrides: list[str]) -> tuple[dict[str, Any], PlatformSpec]:
    """The stack's platform config with ``key=value`` overrides applied, and its validated spec."""
    from infra.config import CONFIG_KEY, load_platform, read_stack_config

    platform = read_stack_config(PROJECT_ROOT / f"Pulumi.{stack}.yaml")[CONFIG_KEY]
    for item in overrides:
        key, _, value = item.partition("=")
        node = platform
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = json.loads(value) if value[:1] in "[{" or value in ("true", "false") else value
    return platform, load_platform(platform)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.lab", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a key of the stack's platform config, e.g. lab.images=built")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("base")
    images_parser = sub.add_parser("images")
    images_parser.add_argument("action", choices=("build", "tags"))
    images_parser.add_argument("--only", action="append", help="build only these images (operations, trino, ...)")
    run_parser = sub.add_parser("run")
    run_parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args(argv)
    platform, spec = _spec(args.stack, args.set)
    if args.command == "base":
        return subprocess.run(["bash", str(PROJECT_ROOT / "scripts" / "lab-base.sh"), spec.lab.base_image],
                              check=False).returncode
    from infra.lab import images
    from infra.services.resolver import CacheResolver

    try:
        artifacts = CacheResolver().resolve(spec)
        if args.command == "images" and args.action == "tags":
            print(json.dumps(images.built_tags(spec, artifacts), indent=2))
            return 0
        client = images.engine()
        if args.command == "images":
            from infra.lab import driver

            took = driver.build_all(spec, artifacts, client, only=set(args.only) if args.only else None)
            print("==> built: " + (", ".join(f"{k} {v:.0f} s" for k, v in took.items()) or "nothing"))
            return 0
        from infra.lab import runner

        resources = runner.record(args.stack, runner.lab_ports(platform, runner.first_run_port()))
        from infra.paths import state_root

        report = runner.up(resources, client, keep=args.keep, state_dir=state_root() / args.stack)
        print(report.summary())
        return 0 if report.ok else 1
    except images.LabImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
