#!/usr/bin/env bash
# Creates the project virtualenv (.venv) from requirements.txt, the one place dependencies are pinned.
# Re-runs only when requirements.txt changed (its sha256 is kept in .venv/.requirements.sha256).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ -x .venv/bin/python ] && [ "$(cat .venv/.requirements.sha256 2>/dev/null)" = "$want" ]; then
  echo "==> .venv up to date with requirements.txt"
  exit 0
fi
echo "==> creating .venv from requirements.txt (first run downloads pyspark, pulumi-aws, ...: a few minutes)"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/pip install --disable-pip-version-check --progress-bar on -q --upgrade pip
.venv/bin/pip install --disable-pip-version-check --progress-bar on -r requirements.txt
echo "$want" > .venv/.requirements.sha256
echo "==> .venv ready"
