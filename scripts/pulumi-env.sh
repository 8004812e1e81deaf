# shellcheck shell=bash
# Environment for the project's Pulumi CLI, for humans at a shell. Source it (bash), from any cwd:
#
#   . /path/to/repo/scripts/pulumi-env.sh
#
# The environment itself is defined once, in infra/control/workspace.py (pulumi_env): the project's
# CLI first on PATH, a local file backend, no update checks, no plugin downloads, and the
# documented lab passphrase "lakehouse-native-lab" unless PULUMI_CONFIG_PASSPHRASE(_FILE) is set.

if [ -z "${BASH_VERSION:-}" ]; then
  echo "pulumi-env.sh: source this file from bash" >&2
  return 1 2>/dev/null || exit 1
fi

__lakehouse_root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
if [ ! -x "$__lakehouse_root/.venv/bin/python" ]; then
  echo "pulumi-env.sh: $__lakehouse_root/.venv is missing; run: make venv" >&2
elif [ ! -x "$__lakehouse_root/.tools/bin/pulumi" ]; then
  echo "pulumi-env.sh: $__lakehouse_root/.tools/bin/pulumi is missing; run: make pulumi" >&2
else
  eval "$(cd "$__lakehouse_root" && .venv/bin/python -m infra.control env --shell)"
fi
unset __lakehouse_root
