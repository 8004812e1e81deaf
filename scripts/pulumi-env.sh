# shellcheck shell=bash
# Environment for the project-local Pulumi CLI. Source it (bash), from any cwd:
#
#   . /path/to/repo/scripts/pulumi-env.sh
#
# Puts <repo>/.tools/bin (built by scripts/install-pulumi.sh) first on PATH and
# points Pulumi at project-local state: no Pulumi Cloud, no update checks and no
# automatic plugin downloads (get.pulumi.com is not reachable here).
#
# PULUMI_CONFIG_PASSPHRASE defaults to the documented lab passphrase
# "lakehouse-native-lab" when neither it nor PULUMI_CONFIG_PASSPHRASE_FILE is set.

if [ -z "${BASH_VERSION:-}" ]; then
  echo "pulumi-env.sh: source this file from bash" >&2
  return 1 2>/dev/null || exit 1
fi

__lakehouse_root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"

case ":${PATH:-}:" in
  *":$__lakehouse_root/.tools/bin:"*) ;;
  *) export PATH="$__lakehouse_root/.tools/bin${PATH:+:$PATH}" ;;
esac

export PULUMI_HOME="$__lakehouse_root/.tools/pulumi-home"
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_BACKEND_URL="file://$__lakehouse_root/.pulumi-state"
export PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK=true
# The native target's dynamic provider forks service processes from a process running gRPC
# threads; gRPC's fork handlers then crash the child before exec (SIGSEGV in event_engine).
export GRPC_ENABLE_FORK_SUPPORT=false
if [ -z "${PULUMI_CONFIG_PASSPHRASE+set}" ] && [ -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]; then
  export PULUMI_CONFIG_PASSPHRASE="lakehouse-native-lab"
fi

mkdir -p "$__lakehouse_root/.pulumi-state" "$PULUMI_HOME"

if [ ! -x "$__lakehouse_root/.tools/bin/pulumi" ]; then
  echo "pulumi-env.sh: $__lakehouse_root/.tools/bin/pulumi is missing; run: bash $__lakehouse_root/scripts/install-pulumi.sh" >&2
fi

unset __lakehouse_root
