"""``python -m infra.stack up|down|outputs|restart|stop|start|smoke|verify|env [--stack NAME]``.

``make up`` runs ``up --stack native`` (then prints endpoints, the ownership review and a smoke check);
``make down`` runs ``down``; ``make verify`` runs ``verify`` (an isolated stack, the probes, destroy).
``env --shell`` prints the Pulumi environment as ``export`` lines (scripts/pulumi-env.sh evals them).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from infra.stack import commands
from infra.stack.workspace import outputs, pulumi_env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.stack", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("command", choices=("up", "down", "outputs", "restart", "stop", "start", "smoke", "verify",
                                            "env"))
    parser.add_argument("service", nargs="?", help="the service to restart or stop (`up` starts it again)")
    parser.add_argument("--stack", default="native")
    parser.add_argument("--shell", action="store_true", help="env: print export lines")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "verify":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "env":
            env = pulumi_env(args.stack if args.stack != "native" else None)
            print("\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items()) if args.shell
                  else json.dumps(env, indent=2))
            return 0
        if args.command == "up":
            seconds = commands.up(args.stack)
            commands.console.print(f"==> stack {args.stack} up in {seconds:.1f} s")
            commands.print_endpoints(args.stack)
            from infra import review

            review.main(["--stack", args.stack])
            return commands.smoke_report(args.stack)
        if args.command == "down":
            commands.down(args.stack)
            return 0
        if args.command == "verify":
            return commands.verify(extra)
        if args.command == "outputs":
            print(json.dumps(outputs(args.stack), indent=2))
            return 0
        if args.command == "stop":
            if not args.service:
                parser.error("stop needs a service name")
            pids = commands.stop(args.service, args.stack)
            commands.console.print(f"==> {args.service} stopped (pids {pids}); `python -m infra.stack up` starts it")
            return 0
        if args.command == "start":
            seconds = commands.up(args.stack, quiet=True)  # starts whatever is not running, restarts nothing else
            commands.console.print(f"==> stack {args.stack} up in {seconds:.1f} s")
            return 0
        if args.command == "restart":
            if not args.service:
                parser.error("restart needs a service name")
            seconds = commands.restart(args.service, args.stack)
            commands.console.print(f"==> {args.service} restarted and healthy in {seconds:.1f} s")
            return 0
        return commands.smoke_report(args.stack)
    except commands.StackCommandFailed as exc:
        commands.console.print(f"[red]error:[/red] {exc}", markup=False, highlight=False)
        return 1


if __name__ == "__main__":
    sys.exit(main())
