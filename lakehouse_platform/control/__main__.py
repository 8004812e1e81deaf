"""``python -m lakehouse_platform.control``: the operator's commands, against a stack.

    up | down | start | smoke | outputs | verify | env [--shell]     the stack itself (``make up`` runs ``up``)
    pulumi                                                          the Pulumi CLI: yours, else the project's build
    claim                                                           record this stack as its state directory's owner
    stop SERVICE | start SERVICE | restart SERVICE                  one service (native: by its recorded pid and
                                                                    pulumi up; the lab: docker stop/start/restart)
    artifacts [--only NAME]                                         obtain what the stack runs (``make artifacts``)
    maintenance run JOB [--table T] [--older-than 10s] | list       maintenance on demand, the jobs
    runs [--job J] [--limit N]                                      the run record
    recovery backup | list | restore | rebuild | restore-postgres   backups and the way back
    tables                                                          the declared tables, owners and promises

Every command takes ``--stack`` (default native); the operations commands read the stack's outputs (or
``--outputs FILE``), print JSON, and exit 1 when what they ran failed. ``up`` also prints the endpoints,
the ownership review and a smoke check.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from lakehouse_platform.control import commands, docker_stack, relocate, services, state, toolchain
from lakehouse_platform.control.adopt import AdoptionRefused
from lakehouse_platform.control.workspace import (
    describe,
    init_project_stacks,
    make_backend_dir,
    outputs,
    pulumi_env,
    workspace,
)


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per operation."""
    top = argparse.ArgumentParser(prog="python -m lakehouse_platform.control",
                                  description=(__doc__ or "").splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--stack", default="native", help="the stack (default: native)")
        return cmd

    for name, help_text in (("up", "pulumi up, then endpoints, ownership and a smoke check"),
                            ("down", "pulumi destroy"), ("outputs", "the stack outputs as JSON"),
                            ("smoke", "the smoke check")):
        command(name, help_text)
    command("start", "start whatever is not running (pulumi up), restart nothing else; with SERVICE, that stopped "
                     "service (the lab: docker start)").add_argument("service", nargs="?")
    command("verify", "the probes (extra arguments go to pytest): against an isolated copy of the native stack, or "
                      "the deployed lab (--stack lab)")
    command("adopt", "take over the stack's resources an earlier release recorded (up, down and refresh do it "
                     "first; run it before a plain `pulumi refresh` or `pulumi destroy` after an upgrade)")
    command("env", "the Pulumi environment").add_argument("--shell", action="store_true", help="as export lines")
    command("claim", "record this checkout's stack (project, stack, backend) as the owner of its state directory: a "
                     "moved checkout, or taking over another stack's data on purpose")
    command("pulumi", "the Pulumi CLI the project runs: yours where it fits (LAKEHOUSE_PULUMI=auto|project|installed), "
                      "else the project's build, built only then (make pulumi)")
    for name in ("stop", "restart"):
        command(name, f"{name} one service").add_argument("service")
    command("artifacts", "obtain every artifact the stack needs").add_argument(
        "--only", action="append", help="only this service's artifact (repeatable)")
    for name, help_text in (("maintenance", "run or list maintenance"), ("runs", "the run record"),
                            ("recovery", "catalog backups and the way back"),
                            ("tables", "the declared tables, their owners, promises and current state")):
        cmd = command(name, help_text)
        cmd.add_argument("--outputs", help="a stack outputs JSON file instead of reading --stack's")
        if name == "maintenance":
            cmd.add_argument("action", choices=("run", "list"))
            cmd.add_argument("job", nargs="?", help="a job id or an action (expire_snapshots, rewrite_data_files, ...)")
            cmd.add_argument("--table", help="only this table (namespace.name)")
            cmd.add_argument("--older-than", help="threshold instead of the job's older_than_days (e.g. 10s, 2h, 7d)")
        elif name == "runs":
            cmd.add_argument("--job")
            cmd.add_argument("--limit", type=int, default=50)
        elif name == "recovery":
            cmd.add_argument("action", choices=("backup", "list", "restore", "rebuild", "restore-postgres"))
            cmd.add_argument("--backup", help="a backup file (default: the newest verified one)")
            cmd.add_argument("--no-roll-forward", action="store_true", help="restore the backup's pointers only")
            cmd.add_argument("--database", help="restore-postgres: the catalog database")
    return top


def operations(args: argparse.Namespace, top: argparse.ArgumentParser) -> int:
    """The operations commands, on the stack's ``operations`` output."""
    from lakehouse_platform.control import operations as ops
    from lakehouse_platform.runtime.config import from_outputs

    if args.command == "maintenance" and args.action == "run" and not args.job:
        top.error("maintenance run needs a job (a job id or an action)")
    deployed: dict[str, Any] = (json.loads(Path(args.outputs).read_text()) if args.outputs
                                else outputs(args.stack))
    try:
        config, creds = from_outputs(deployed)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    if args.command == "maintenance":
        return ops.cmd_maintenance(args, config, creds)
    if args.command == "runs":
        return ops.cmd_runs(args, config)
    if args.command == "recovery":
        return ops.cmd_recovery(args, deployed, config, creds)
    return ops.cmd_tables(config, creds)


def _remove_build_leftovers(stack: str) -> None:
    """The lab: what building its own image left in the engine goes too (``docker_stack.build_leftovers``)."""
    if docker_stack.is_docker(stack):
        from lakehouse_platform.config import load_stack

        removed = docker_stack.remove_build_leftovers(load_stack(stack))
        if removed:
            commands.console.print(f"==> removed {len(removed)} intermediate container(s) the image build left")


def main(argv: list[str] | None = None) -> int:
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra and args.command != "verify":
        top.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "pulumi":
            toolchain.ensure(lambda line: commands.console.print(line, markup=False, highlight=False, soft_wrap=True))
            return 0
        if args.command == "env":
            try:
                toolchain.choose()  # none at all: say so rather than print an environment without a CLI
            except toolchain.ToolchainError as exc:
                print(f"error: {exc}", file=sys.stderr)  # stdout is eval'ed by scripts/pulumi-env.sh
                return 1
            env = pulumi_env(args.stack if args.stack != "native" else None)
            # A fresh clone: the project's backend and its stacks made, so `pulumi preview --stack <s>` works first.
            make_backend_dir(env)
            for made in init_project_stacks(env):
                print(f"==> stack {made} created on the project's backend", file=sys.stderr)
            print("\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items()) if args.shell
                  else json.dumps(env, indent=2))
            return 0
        if args.command == "claim":
            where, me, before = state.take_over(args.stack)
            was = f" (it recorded {before.describe()})" if before else ""
            commands.console.print(f"==> {where} now belongs to {me.describe()}{was}", markup=False, highlight=False)
            return 0
        if args.command == "adopt":
            from lakehouse_platform.control.adopt import adopt
            from lakehouse_platform.control.workspace import select

            select(args.stack)
            adopted = adopt(args.stack, say=lambda line: commands.console.print(line, markup=False))
            if not adopted:
                commands.console.print(f"==> stack {args.stack}: every resource already runs this release's providers")
            return 0
        if args.command == "artifacts":
            from lakehouse_platform.control.artifacts import fetch

            return fetch(args.stack, args.only)
        if args.command in ("maintenance", "runs", "recovery", "tables"):
            return operations(args, top)
        if args.command in ("up", "down") and docker_stack.is_docker(args.stack):
            # The lab: an engine that answers, the provider plugin, and (lab.images: built) the service images.
            if args.command == "up":
                docker_stack.prepare(args.stack, workspace(args.stack), commands.console.print)
            else:
                commands.console.print(f"==> engine: {docker_stack.engine()}")
                commands.console.print(f"==> provider: {docker_stack.ensure_provider(workspace(args.stack))}")
        if args.command == "up":
            commands.console.print(f"==> {describe(args.stack)}", markup=False, highlight=False)
            seconds = commands.up(args.stack)
            commands.console.print(f"==> stack {args.stack} up in {seconds:.1f} s")
            _remove_build_leftovers(args.stack)
            commands.print_endpoints(args.stack)
            from lakehouse_platform.review import ownership

            ownership.main(["--stack", args.stack])
            return commands.smoke_report(args.stack)
        if args.command == "down":
            state.check(args.stack)  # never another stack's platform
            commands.down(args.stack)
            _remove_build_leftovers(args.stack)
            return 0
        if args.command == "verify":
            return commands.verify(extra, args.stack)
        if args.command == "outputs":
            print(json.dumps(outputs(args.stack), indent=2))
            return 0
        if args.command == "stop":
            seconds = commands.stop(args.service, args.stack)
            commands.console.print(f"==> {args.service} stopped in {seconds:.1f} s; "
                                   "`python -m lakehouse_platform.control start "
                                   f"{args.service} --stack {args.stack}` starts it again")
            return 0
        if args.command == "start" and args.service:
            seconds = commands.start(args.service, args.stack)
            commands.console.print(f"==> {args.service} started and healthy in {seconds:.1f} s")
            return 0
        if args.command == "start":
            seconds = commands.up(args.stack, quiet=True)  # starts whatever is not running, restarts nothing else
            commands.console.print(f"==> stack {args.stack} up in {seconds:.1f} s")
            return 0
        if args.command == "restart":
            seconds = commands.restart(args.service, args.stack)
            commands.console.print(f"==> {args.service} restarted and healthy in {seconds:.1f} s")
            return 0
        return commands.smoke_report(args.stack)
    except (commands.StackCommandFailed, docker_stack.NotReady, services.ServiceControlError,
            toolchain.ToolchainError, relocate.RelocationRefused, AdoptionRefused, state.NotTheOwner) as exc:
        # One line however long (a path, a backend URL), never folded inside a word.
        commands.console.print(f"error: {exc}", markup=False, highlight=False, style="red", soft_wrap=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
