#!/usr/bin/env bash
# Regenerates requirements.lock from pyproject.toml: the whole dependency tree, every file hash-pinned.
# uv (from PyPI) is installed into the cache once; the lock is for CPython 3.11 on x86_64 Linux.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}"
uv_version="0.13.8"
tool="$cache/tools/uv-$uv_version"
if [ ! -x "$tool/bin/uv" ]; then
  echo "==> installing uv $uv_version into $tool"
  python3 -m pip install --disable-pip-version-check -q --target "$tool" "uv==$uv_version"
fi
cd "$root"
"$tool/bin/uv" pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
  --python-platform x86_64-manylinux_2_28 --no-header -o requirements.lock
echo "==> requirements.lock: $(grep -c '==' requirements.lock) packages pinned"
# The lab's operations containers install a subset, at the lock's versions, with the same hashes.
for role in scheduler backup; do
  "$tool/bin/uv" pip compile "infra/operations/requirements-$role.in" -c requirements.lock --generate-hashes \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 --no-header \
    -o "infra/operations/requirements-$role.txt"
  echo "==> infra/operations/requirements-$role.txt: $(grep -c '==' "infra/operations/requirements-$role.txt") packages"
done
# The operations image's dependencies: a subset, held to the versions of the project's own lock.
"$tool/bin/uv" pip compile docker/operations-requirements.in --generate-hashes --python-version 3.11 \
  --python-platform x86_64-manylinux_2_28 --no-header -c requirements.lock -o docker/operations-requirements.lock
echo "==> docker/operations-requirements.lock: $(grep -c '==' docker/operations-requirements.lock) packages pinned"
