#!/usr/bin/env bash
# Creates the project virtualenv (.venv) from requirements.lock (the whole dependency tree, hash-pinned;
# its direct dependencies are declared in pyproject.toml), then installs the project itself, editable (the package
# and its `lakehouse` command), and puts the checkout on the path for its tests and benchmarks.
# Re-runs only when the lock or pyproject.toml changed (their sha256 is kept in .venv/.lock.sha256).
# The installer is uv (scripts/uv.sh, hash-pinned), with its cache under the project's: a venv from a warm cache is
# seconds (pip took over two minutes for each of the e2e tier's clones).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
want="$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ -x .venv/bin/python ] && [ "$(cat .venv/.lock.sha256 2>/dev/null)" = "$want" ]; then
  echo "==> .venv up to date with requirements.lock"
  exit 0
fi
uv="$(scripts/uv.sh)"
export UV_CACHE_DIR="${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}/uv"
echo "==> installing .venv from requirements.lock (first run downloads pyspark, pulumi-aws, ...: a few minutes)"
[ -x .venv/bin/python ] || "$python" -m venv .venv
"$uv" pip install --python .venv/bin/python --require-hashes --no-deps -r requirements.lock
"$uv" pip install --python .venv/bin/python --quiet --no-deps --no-build-isolation -e .
# The checkout's own tooling (tests.support, which the benchmarks use too) imports from the checkout: it is not in
# the package (the wheel holds lakehouse_platform alone).
site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$root" > "$site/lakehouse-platform-checkout.pth"
echo "$want" > .venv/.lock.sha256
echo "==> .venv ready"
