"""``lakehouse lab``: the lab's base image, its images, and its containers on a Docker engine; ``lakehouse engine``:
a Docker engine of the project's own where the host has none.

    lab [--stack lab] [--set KEY=VALUE]... base          lab.base_image from Debian's mirror unless present
    lab [--stack lab] [--set KEY=VALUE]... images build  the operations image and, with lab.images: built, every
                                                         service image
    lab [--stack lab] [--set KEY=VALUE]... images tags   the tag each service runs, without building
    lab [--stack lab] [--set KEY=VALUE]... run [--keep] [--outputs F] [--probe]
                                                         the program with every resource made on the engine (no
                                                         Pulumi provider: lakehouse_platform/lab/runner.py), to
                                                         healthy; with --probe the smoke check and the engines probe
                                                         against it; then destroyed
    engine start | stop | status | env                   the project's own dockerd (its scripts ship in the package)

The engine is DOCKER_HOST's (``eval "$(lakehouse engine env)"``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.paths import PACKAGE_DIR, reports_dir

#: The stack a run deploys as: its own state directory and names, never a user's ``lab``.
RUN_STACK = "lab-run"
#: The lab's shell scripts (package data): the engine of the project's own, and the base image from Debian's mirror.
SCRIPTS = PACKAGE_DIR / "lab" / "scripts"
ENGINE_ACTIONS = ("start", "stop", "status", "env")


def _spec(stack: str, overrides: list[str]) -> tuple[dict[str, Any], PlatformSpec]:
    """The stack's platform config with ``key=value`` overrides applied, and its validated spec."""
    from lakehouse_platform.config import load_platform, stack_platform

    platform = stack_platform(stack)  # over its lakehouse:extends stack's (Pulumi.lab-offline.yaml)
    for item in overrides:
        key, _, value = item.partition("=")
        node = platform
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = json.loads(value) if value[:1] in "[{" or value in ("true", "false") else value
    return platform, load_platform(platform)


def run(platform: dict[str, Any], client: Any, keep: bool, outputs_file: str | None, probe: bool) -> int:
    """The lab from the program on the engine (``runner.deploy``, as stack ``lab-run``), optionally probed, then
    destroyed unless ``keep``; non-zero when anything failed or was left in the engine."""
    import tempfile
    from pathlib import Path

    from lakehouse_platform.control import commands
    from lakehouse_platform.lab import runner

    deployment = runner.deploy(RUN_STACK, runner.run_stack(platform), client)
    failed = not deployment.report.ok
    print(deployment.report.summary())
    try:
        with tempfile.TemporaryDirectory(prefix="lab-run-") as scratch:
            path = Path(outputs_file) if outputs_file else Path(scratch) / "outputs.json"
            path.write_text(json.dumps(deployment.outputs, indent=2))
            path.chmod(0o600)  # it holds the stack's secrets, as `pulumi stack output --show-secrets` does
            if probe and not failed:
                reports = reports_dir()
                reports.mkdir(exist_ok=True)
                failed |= commands.print_smoke(commands.smoke_checks(deployment.outputs)) != 0
                failed |= subprocess.run(
                    [sys.executable, "-m", "pytest", str(PACKAGE_DIR / "probes" / "test_engines.py"), "--outputs",
                     str(path), "-p", "no:cacheprovider", f"--junitxml={reports / 'lab-run-probes.xml'}"],
                    check=False).returncode != 0
    finally:
        if not keep:
            problems = deployment.destroy()
            left = deployment.left_in_engine()
            print(f"==> destroyed; left in the engine: {', '.join(left) or 'nothing'}")
            failed |= bool(problems or left)
    return 1 if failed else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``lakehouse lab``'s arguments and its three subcommands."""
    parser.add_argument("--stack", default="lab", help="the lab's stack (Pulumi.<stack>.yaml; default: lab)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a key of the stack's platform config, e.g. lab.images=built")
    sub = parser.add_subparsers(dest="lab_command", required=True, metavar="{base,images,run}")
    sub.add_parser("base", help="lab.base_image from Debian's mirror unless the engine has it (debootstrap, root)",
                   description="Make the stack's lab.base_image from Debian's mirror with debootstrap and import it "
                               "into the engine, unless the engine has it (no registry needed; needs root).")
    images = sub.add_parser("images", help="build the lab's images, or print the tag each service runs",
                            description="The operations image and (lab.images: built) every service image, built "
                                        "from the pinned artifacts in the cache; or the tags, without building.")
    images.add_argument("action", choices=("build", "tags"), help="build the images, or print their tags")
    images.add_argument("--only", action="append", metavar="IMAGE",
                        help="build only this image (operations, trino, ...; repeatable)")
    run_parser = sub.add_parser("run", help="the lab from the program on the engine, to healthy, then destroyed",
                                description="The program with every resource made on the engine (no Pulumi "
                                            "provider), to healthy; then destroyed unless --keep.")
    run_parser.add_argument("--keep", action="store_true", help="leave the lab running (destroy it by hand)")
    run_parser.add_argument("--outputs", help="write the stack's outputs (secrets included) to this file")
    run_parser.add_argument("--probe", action="store_true",
                            help="then the smoke check and the engines probe against it (the CI stage)")


def main(args: argparse.Namespace) -> int:
    """``lakehouse lab ...`` (``add_arguments``); its exit code."""
    from lakehouse_platform.control.progress import step

    platform, spec = _spec(args.stack, args.set)
    if args.lab_command == "base":
        with step(f"lab base image {spec.lab.base_image}"):
            return subprocess.run(["bash", str(SCRIPTS / "lab-base.sh"), spec.lab.base_image],
                                  check=False).returncode
    from lakehouse_platform.artifacts.artifact import ArtifactError
    from lakehouse_platform.control import image_builds
    from lakehouse_platform.control.services import docker_client
    from lakehouse_platform.services.built_image import ImageBuildError
    from lakehouse_platform.services.resolver import CacheResolver
    from lakehouse_platform.targets import lab_images

    try:
        artifacts = CacheResolver().resolve(spec)
        if args.lab_command == "images" and args.action == "tags":
            print(json.dumps(lab_images.built_tags(spec, artifacts), indent=2))
            return 0
        client = docker_client()
        if args.lab_command == "images":
            took = image_builds.build_all(spec, artifacts, client, only=set(args.only) if args.only else None)
            print("==> built: " + (", ".join(f"{k} {v:.0f} s" for k, v in took.items()) or "nothing"))
            return 0
        return run(platform, client, keep=args.keep, outputs_file=args.outputs, probe=args.probe)
    except (ImageBuildError, ArtifactError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def engine(action: str) -> int:
    """``lakehouse engine <action>``: the project's own Docker engine (``lab/scripts/docker-engine.sh``)."""
    from lakehouse_platform.control.progress import step

    argv = ["bash", str(SCRIPTS / "docker-engine.sh"), action]
    if action == "start":
        with step("docker engine"):
            return subprocess.run(argv, check=False).returncode
    return subprocess.run(argv, check=False).returncode
