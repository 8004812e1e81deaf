# shellcheck shell=bash
# Environment for the Pulumi CLI the project runs, for humans at a shell. Source it (bash), from any cwd:
#
#   . /path/to/repo/scripts/pulumi-env.sh
#
# The CLI is yours where one on PATH fits, else the project's build (lakehouse_platform/control/toolchain.py; `make pulumi`
# says which). The environment itself is defined once, in lakehouse_platform/control/workspace.py (pulumi_env): that CLI's
# directory first on PATH, the backend you chose (PULUMI_BACKEND_URL or `pulumi login`) else the project's local
# file backend, no update checks, and the documented lab passphrase "lakehouse-native-lab" unless
# PULUMI_CONFIG_PASSPHRASE(_FILE) is set; with the project's build also its own Pulumi home and no plugin downloads.

if [ -z "${BASH_VERSION:-}" ]; then
  echo "pulumi-env.sh: source this file from bash" >&2
  return 1 2>/dev/null || exit 1
fi

__lakehouse_root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
if [ ! -x "$__lakehouse_root/.venv/bin/python" ]; then
  echo "pulumi-env.sh: $__lakehouse_root/.venv is missing; run: make venv" >&2
elif __lakehouse_env="$(cd "$__lakehouse_root" && .venv/bin/lakehouse env --shell)"; then
  eval "$__lakehouse_env"
else
  echo "pulumi-env.sh: no Pulumi CLI to run (the error above); run: make pulumi" >&2
fi
unset __lakehouse_root __lakehouse_env
