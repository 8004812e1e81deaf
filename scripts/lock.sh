#!/usr/bin/env bash
# Regenerates the project's two locks from pyproject.toml, every file hash-pinned, for CPython 3.11 on x86_64 Linux:
#   requirements.lock       the whole tree (dependencies + dev): the project's venv (`make venv`)
#   lakehouse_platform/runtime/image/operations.lock  the `operations` group, held to requirements.lock: the one operations image
# uv (from PyPI, hash-checked: scripts/uv.sh) is installed into the cache once.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
uv="$("$root/scripts/uv.sh")"
cd "$root"
compile=("$uv" pip compile --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28
         --no-header)
"${compile[@]}" pyproject.toml --extra dev -o requirements.lock
echo "==> requirements.lock: $(grep -c '==' requirements.lock) packages pinned"
# The operations group alone (uv compiles a pyproject's extra only together with its dependencies).
group="$(mktemp --suffix=.in)"
trap 'rm -f "$group"' EXIT
python3 -c 'import sys, tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["operations"]))' > "$group"
"${compile[@]}" "$group" -c requirements.lock -o lakehouse_platform/runtime/image/operations.lock
sed -i "s|$group|pyproject.toml [operations]|" lakehouse_platform/runtime/image/operations.lock
echo "==> lakehouse_platform/runtime/image/operations.lock: $(grep -c '==' lakehouse_platform/runtime/image/operations.lock) packages pinned"
