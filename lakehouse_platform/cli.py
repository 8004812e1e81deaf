"""``lakehouse``: the platform's one command line (the console script; ``python -m lakehouse_platform`` is the same).

Every command works on the Pulumi project in the working directory, or the one ``-C DIR`` names: its stack files
(``Pulumi.<stack>.yaml``), its backend (``PULUMI_BACKEND_URL``, ``pulumi login``, else ``<project>/.pulumi-state``)
and its reports (``<project>/reports``); the package supplies everything else (the probes, the policy pack, the
operations image, the lab's scripts). ``lakehouse <command> --help`` says what each one does.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

DISTRIBUTION = "lakehouse-platform"
PROG = "lakehouse"


def _version() -> str:
    """The installed distribution's version (its metadata: the platform's version, pyproject's at build time)."""
    return importlib.metadata.version(DISTRIBUTION)


def _command(sub: Any, name: str, summary: str, description: str | None = None) -> argparse.ArgumentParser:
    """A subcommand: ``summary`` in ``lakehouse --help``, ``description`` (default the summary) in its own."""
    return sub.add_parser(name, help=summary, description=description or summary[0].upper() + summary[1:] + ".")


def _stack(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--stack", required=required, metavar="STACK",
                        help="the project's stack (its Pulumi.<stack>.yaml)")


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per operation, each with its description and its arguments' help."""
    top = argparse.ArgumentParser(
        prog=PROG, description="The lakehouse platform's command line: deploy, review, verify and operate the stacks "
                               "of a Pulumi project that uses the package (lakehouse_platform).",
        epilog="lakehouse COMMAND --help says what a command does and takes.")
    top.add_argument("--version", action="version", version=f"{PROG} {_version()}",
                     help="print the platform's version and exit")
    top.add_argument("-C", "--project", metavar="DIR",
                     help="the Pulumi project to work on (the directory with Pulumi.yaml; default: the working "
                          "directory or the nearest one above it)")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # -- the stack ------------------------------------------------------------------------------------------------
    up = _command(sub, "up", "deploy the stack: pulumi up, then its endpoints, ownership and a smoke check",
                  "pulumi up of the stack (a lab's engine, provider and built images made ready first; a native "
                  "stack's data moved to where this release keeps it), then its endpoints, the ownership review and "
                  "the smoke check. Exit 1 when the deploy or the smoke check failed.")
    _stack(up)
    _stack(_command(sub, "down", "destroy the stack (pulumi destroy): no process or container is left running",
                    "pulumi destroy of the stack: every process or container goes; a native stack's data directory "
                    "is kept."))
    _stack(_command(sub, "smoke", "the smoke check of the deployed stack: store, catalog, engines, signals"))
    outputs = _command(sub, "outputs", "the stack's outputs as JSON, secrets hidden unless --show-secrets",
                       "The stack's outputs as JSON. Like `pulumi stack output`, a secret output shows as "
                       "[secret] unless --show-secrets.")
    _stack(outputs)
    outputs.add_argument("--show-secrets", action="store_true", help="show the secret outputs' values")
    verify = _command(sub, "verify", "run the probes against the deployed stack, JUnit XML for CD",
                      "The post-deploy probes (shipped in the package) against the deployed stack; JUnit XML in "
                      "--junit. On a stack not marked disposable only the safe probes run (the others skip, saying "
                      "why). Arguments after -- go to pytest (e.g. -m catalog, --disruptive=STACK).")
    _stack(verify)
    verify.add_argument("--junit", type=Path, metavar="FILE",
                        help="where the JUnit XML goes (default: <project>/reports/probes.xml)")
    verify.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="-- PYTEST_ARGS",
                        help="passed on to pytest (after --)")
    env = _command(sub, "env", "the environment every Pulumi command of the project runs with",
                   "The environment the commands give Pulumi (the chosen CLI first on PATH, the backend, the "
                   "passphrase of lab stacks, the Python of the policy pack), as JSON or export lines: "
                   "eval \"$(lakehouse env --shell)\" && pulumi preview --stack dev")
    _stack(env, required=False)
    env.add_argument("--shell", action="store_true", help="print export lines for a shell to eval")
    _stack(_command(sub, "adopt", "take over the stack's resources an earlier release recorded (up, down and refresh "
                                  "do it first)",
                    "Hand every resource an earlier release recorded to this release's providers (up, down and "
                    "refresh do it first; run it before a plain `pulumi refresh` or `pulumi destroy` after an "
                    "upgrade)."))
    _stack(_command(sub, "claim", "record this project's stack as the owner of its state directory",
                    "Record the project's stack (project, stack, backend) as the owner of its state directory: a "
                    "moved checkout, or taking over another stack's data on purpose."))
    _command(sub, "pulumi", "the Pulumi CLI the project runs, and why (yours where it fits)",
             "Which Pulumi CLI the commands run: yours on PATH where its version and its Python plugins fit "
             "(LAKEHOUSE_PULUMI=auto|project|installed), else, in a checkout of this repository, its own build.")
    artifacts = _command(sub, "artifacts", "obtain everything the stack runs or mounts, into the artifact cache",
                         "Obtain every artifact the stack's target runs or mounts, for the stack's pins, into the "
                         "artifact cache (checksummed). pulumi up never downloads: it only looks them up.")
    _stack(artifacts)
    artifacts.add_argument("--only", action="append", metavar="SERVICE",
                           help="only this service's artifact (repeatable)")

    # -- one service ----------------------------------------------------------------------------------------------
    start = _command(sub, "start", "start what is not running; with SERVICE, that stopped service",
                     "Without SERVICE: pulumi up, which starts whatever is not running and restarts nothing "
                     "else. With SERVICE: that stopped service (natively pulumi up; the lab: docker start), to "
                     "healthy.")
    _stack(start)
    start.add_argument("service", nargs="?", help="the service to start (e.g. trino)")
    for name, what in (("stop", "stop one service; nothing starts it again until start"),
                       ("restart", "restart one service, to healthy")):
        cmd = _command(sub, name, what, f"{what[0].upper()}{what[1:]} (natively by its recorded pid; the lab: "
                                        f"docker {name}).")
        _stack(cmd)
        cmd.add_argument("service", help="the service (e.g. rest-fixture)")

    # -- the operating layers -------------------------------------------------------------------------------------
    maintenance = _command(sub, "maintenance", "run a maintenance job now, or list the jobs and their last runs")
    maintenance.add_argument("action", choices=("run", "list"), help="run a job, or list them")
    maintenance.add_argument("job", nargs="?",
                             help="run: a job id or an action (expire_snapshots, rewrite_data_files, ...)")
    maintenance.add_argument("--table", help="only this table (namespace.name)")
    maintenance.add_argument("--older-than", metavar="AGE",
                             help="a threshold instead of the job's older_than_days (e.g. 10s, 2h, 7d)")
    runs = _command(sub, "runs", "the run record: maintenance and backups, newest first")
    runs.add_argument("--job", help="only this job's runs")
    runs.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    recovery = _command(sub, "recovery", "catalog backups and the way back",
                        "Catalog backups and the way back: back up now, list the backups, restore the catalog's "
                        "pointers (rolled forward to the newest metadata), rebuild it from the store, or restore a "
                        "PostgreSQL catalog database.")
    recovery.add_argument("action", choices=("backup", "list", "restore", "rebuild", "restore-postgres"),
                          help="what to do")
    recovery.add_argument("--backup", help="a backup file (default: the newest verified one)")
    recovery.add_argument("--no-roll-forward", action="store_true", help="restore the backup's pointers only")
    recovery.add_argument("--database", help="restore-postgres: the catalog database")
    tables = _command(sub, "tables", "the declared tables, their owners, promises and current state")
    for cmd in (maintenance, runs, recovery, tables):
        _stack(cmd, required=False)
        cmd.add_argument("--outputs", type=Path, metavar="FILE",
                         help="a stack outputs JSON file (pulumi stack output --json --show-secrets) instead of "
                              "reading --stack's")

    # -- review, policy pack --------------------------------------------------------------------------------------
    from lakehouse_platform.review import arguments as review_arguments

    review = _command(sub, "review", "the ownership review of a stack, or the change review of a stack file",
                      "The ownership review (who owns each layer, what it promises, what down means; tables, "
                      "grants, recovery) straight from a stack file, before anything is deployed; or, with "
                      "--base/--preview, the change review (which owners must approve a change).")
    review_arguments.add_arguments(review)
    pack = _command(sub, "policy-pack", "the path of the policy pack (pulumi preview --policy-pack <it>)",
                    "Print the directory of the policy pack shipped in the package, for pulumi preview "
                    "--policy-pack \"$(lakehouse policy-pack)\"; with --config STACK, the pack's config for a "
                    "stack (--policy-pack-config) instead.")
    pack.add_argument("--config", metavar="STACK", help="render the pack's config for this stack instead")
    pack.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the config here (default: stdout)")

    # -- the lab ----------------------------------------------------------------------------------------------------
    from lakehouse_platform.lab import commands as lab_commands

    lab = _command(sub, "lab", "the lab's base image, its images, and a run of it on a Docker engine",
                   "The lab on a Docker engine (DOCKER_HOST's, or the project's own: lakehouse engine start): its "
                   "base image, its images built from the pinned artifacts, or a run of the program with every "
                   "resource made on the engine.")
    lab_commands.add_arguments(lab)
    engine = _command(sub, "engine", "a Docker engine of the project's own, where the host has none",
                      "A Docker engine of the project's own (Debian's docker.io; dockerd under the state "
                      "directory): start it, stop it and undo what it changed, its status, or the lines that point "
                      "a shell at it (eval \"$(lakehouse engine env)\").")
    engine.add_argument("action", choices=lab_commands.ENGINE_ACTIONS, help="what to do with the engine")
    return top


def _need_stack(args: argparse.Namespace, top: argparse.ArgumentParser) -> str:
    if not args.stack:
        top.error(f"{args.command}: name the stack (--stack NAME) or an outputs file (--outputs FILE)")
    return str(args.stack)


def _operations(args: argparse.Namespace, top: argparse.ArgumentParser) -> int:
    """The operations commands, on the stack's ``operations`` output."""
    from lakehouse_platform.control import operations as ops
    from lakehouse_platform.control.workspace import outputs
    from lakehouse_platform.runtime.config import from_outputs

    if args.command == "maintenance" and args.action == "run" and not args.job:
        top.error("maintenance run needs a job (a job id or an action)")
    deployed: dict[str, Any] = (json.loads(Path(args.outputs).read_text()) if args.outputs
                                else outputs(_need_stack(args, top)))
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


def shown_outputs(found: dict[str, Any], show_secrets: bool) -> dict[str, Any]:
    """Outputs (name -> (value, is secret)) as ``pulumi stack output --json`` shows them: a secret as ``[secret]``
    unless ``show_secrets``."""
    return {key: value if show_secrets or not secret else "[secret]" for key, (value, secret) in found.items()}


def _policy_pack(args: argparse.Namespace) -> int:
    from lakehouse_platform.policies.config import PACK_DIR, EnforcementError, render_policy_config

    if not args.config:
        print(PACK_DIR)
        return 0
    try:
        text = json.dumps(render_policy_config(args.config), indent=2, sort_keys=True)
    except EnforcementError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.output:
        args.output.write_text(text + "\n")
    else:
        print(text)
    return 0


def _remove_build_leftovers(stack: str) -> None:
    """The lab: what building its own image left in the engine goes too (``docker_stack.build_leftovers``)."""
    from lakehouse_platform.control import commands, docker_stack

    if docker_stack.is_docker(stack):
        from lakehouse_platform.config import load_stack

        removed = docker_stack.remove_build_leftovers(load_stack(stack))
        if removed:
            commands.console.print(f"==> removed {len(removed)} intermediate container(s) the image build left")


def _stack_commands(args: argparse.Namespace) -> int:
    """up, down, smoke, outputs, verify, start, stop, restart."""
    from lakehouse_platform.control import commands, docker_stack
    from lakehouse_platform.control.workspace import describe, select, workspace

    console, stack = commands.console, args.stack
    if args.command in ("up", "down") and docker_stack.is_docker(stack):
        # The lab: an engine that answers, the provider plugin, and (lab.images: built) the service images.
        if args.command == "up":
            docker_stack.prepare(stack, workspace(stack), console.print)
        else:
            console.print(f"==> engine: {docker_stack.engine()}")
            console.print(f"==> provider: {docker_stack.ensure_provider(workspace(stack))}")
    if args.command == "up":
        console.print(f"==> {describe(stack)}", markup=False, highlight=False)
        console.print(f"==> stack {stack} up in {commands.up(stack):.1f} s")
        _remove_build_leftovers(stack)
        commands.print_endpoints(stack)
        from lakehouse_platform.review import ownership

        ownership.main(["--stack", stack])
        return commands.smoke_report(stack)
    if args.command == "down":
        from lakehouse_platform.control import state

        state.check(stack)  # never another stack's platform
        commands.down(stack)
        _remove_build_leftovers(stack)
        return 0
    if args.command == "verify":
        extra = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
        return commands.verify(stack, extra, args.junit)
    if args.command == "outputs":
        found = {key: (value.value, value.secret) for key, value in select(stack).outputs().items()}
        print(json.dumps(shown_outputs(found, args.show_secrets), indent=2))
        return 0
    if args.command == "stop":
        seconds = commands.stop(args.service, stack)
        console.print(f"==> {args.service} stopped in {seconds:.1f} s; `lakehouse start {args.service} --stack "
                      f"{stack}` starts it again")
        return 0
    if args.command == "start" and args.service:
        console.print(f"==> {args.service} started and healthy in {commands.start(args.service, stack):.1f} s")
        return 0
    if args.command == "start":
        seconds = commands.up(stack, quiet=True)  # starts whatever is not running, restarts nothing else
        console.print(f"==> stack {stack} up in {seconds:.1f} s")
        return 0
    if args.command == "restart":
        console.print(f"==> {args.service} restarted and healthy in {commands.restart(args.service, stack):.1f} s")
        return 0
    return commands.smoke_report(stack)


def _dispatch(args: argparse.Namespace, top: argparse.ArgumentParser) -> int:
    from lakehouse_platform.control import toolchain

    if args.command == "pulumi":
        from lakehouse_platform.control import commands

        toolchain.ensure(lambda line: commands.console.print(line, markup=False, highlight=False, soft_wrap=True))
        return 0
    if args.command == "env":
        from lakehouse_platform.control.workspace import init_project_stacks, make_backend_dir, pulumi_env

        try:
            toolchain.choose()  # none at all: say so rather than print an environment without a CLI
        except toolchain.ToolchainError as exc:
            print(f"error: {exc}", file=sys.stderr)  # stdout is eval'ed
            return 1
        env = pulumi_env(args.stack)
        # A fresh project: its backend and its stacks made, so `pulumi preview --stack <s>` works first.
        make_backend_dir(env)
        for made in init_project_stacks(env):
            print(f"==> stack {made} created on the project's backend", file=sys.stderr)
        print("\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items()) if args.shell
              else json.dumps(env, indent=2))
        return 0
    if args.command == "claim":
        from lakehouse_platform.control import commands, state

        where, me, before = state.take_over(args.stack)
        was = f" (it recorded {before.describe()})" if before else ""
        commands.console.print(f"==> {where} now belongs to {me.describe()}{was}", markup=False, highlight=False)
        return 0
    if args.command == "adopt":
        from lakehouse_platform.control import commands
        from lakehouse_platform.control.adopt import adopt
        from lakehouse_platform.control.workspace import select

        if not adopt(select(args.stack), say=lambda line: commands.console.print(line, markup=False)):
            commands.console.print(f"==> stack {args.stack}: every resource already runs this release's providers")
        return 0
    if args.command == "artifacts":
        from lakehouse_platform.control.artifacts import fetch

        return fetch(args.stack, args.only)
    if args.command in ("maintenance", "runs", "recovery", "tables"):
        return _operations(args, top)
    if args.command == "review":
        from lakehouse_platform.review import ownership

        return ownership.run(args)
    if args.command == "policy-pack":
        return _policy_pack(args)
    if args.command == "lab":
        from lakehouse_platform.lab import commands as lab_commands

        return lab_commands.main(args)
    if args.command == "engine":
        from lakehouse_platform.lab import commands as lab_commands

        return lab_commands.engine(args.action)
    return _stack_commands(args)


def main(argv: list[str] | None = None) -> int:
    """``lakehouse``; its exit code (1: what it ran failed; 2: bad input, said without a traceback)."""
    from lakehouse_platform.paths import PROJECT_ENV, ProjectNotFound, project_root

    top = parser()
    args = top.parse_args(argv)
    if args.project:
        os.environ[PROJECT_ENV] = str(Path(args.project).resolve())  # for this process and every one it starts
    from lakehouse_platform.config import ConfigError
    from lakehouse_platform.control import docker_stack, relocate, services, state, toolchain
    from lakehouse_platform.control.adopt import AdoptionRefused
    from lakehouse_platform.control.workspace import StackCommandFailed

    try:
        if args.command not in ("engine", "policy-pack") and not (args.command == "review" and args.root):
            project_root()  # every other command works on a project: say so up front when there is none
        return _dispatch(args, top)
    except (ProjectNotFound, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`lakehouse outputs | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (Python's flush at exit has nowhere to go)
        return 0
    except (StackCommandFailed, docker_stack.NotReady, services.ServiceControlError, toolchain.ToolchainError,
            relocate.RelocationRefused, AdoptionRefused, state.NotTheOwner) as exc:
        from lakehouse_platform.control.commands import console

        # One line however long (a path, a backend URL), never folded inside a word.
        console.print(f"error: {exc}", markup=False, highlight=False, style="red", soft_wrap=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
