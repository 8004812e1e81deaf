#!/usr/bin/env bash
# Prints the path of the uv the project's scripts run (venv.sh, lock.sh), installing it into the cache first, once,
# from PyPI with the hashes of scripts/uv-requirements.lock.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}"
version="$(sed -n 's/^uv==\([^ ]*\).*/\1/p' "$root/scripts/uv-requirements.lock")"
tool="$cache/tools/uv-$version"
if [ ! -x "$tool/bin/uv" ]; then
  echo "==> installing uv $version into $tool (hash-checked)" >&2
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --disable-pip-version-check -q --require-hashes --no-deps --target "$tool.partial" \
    -r "$root/scripts/uv-requirements.lock" >&2
  rm -rf "$tool" && mv "$tool.partial" "$tool"
fi
echo "$tool/bin/uv"
