#!/usr/bin/env bash
# Lints the GitHub Actions workflows the project ships as documentation (examples/github-actions/*.yml)
# with actionlint, so an example users copy stays a valid workflow. `make lint` runs it when Go is on
# PATH, like the other Go checks; from any directory:
#
#   bash scripts/check-workflows.sh [FILE...]      # default: every examples/github-actions/*.yml
#
# actionlint is built from the Go module proxy at the version tools/actionlint/go.mod requires, against
# its committed go.sum (-mod=readonly), into the cache, never into the repository:
#   ${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}/actionlint/<version>/bin   actionlint + SHA256SUMS + RECIPE
# A cached build is reused only when its RECIPE (hash of the pins and the Go version) matches and its
# sha256 verifies; otherwise it is rebuilt (cold: about a minute on 2 cores). When shellcheck is on PATH,
# actionlint also checks every `run:` script with it (it is optional: without it those are not checked).
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"
# shellcheck source=scripts/go-env.sh
. "$SCRIPT_DIR/go-env.sh"   # CACHE, GOMODCACHE, GOCACHE, GOFLAGS, CGO_ENABLED=0, GOWORK=off
MOD="$REPO_ROOT/tools/actionlint"
TOOL="github.com/rhysd/actionlint"

START=$SECONDS
step() { printf '==> [%3ss] %s\n' "$((SECONDS - START))" "$*"; }
die() { printf 'check-workflows: error: %s\n' "$*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "go is not on PATH (Go >= 1.26 builds actionlint)"

VERSION="$(awk -v m="$TOOL" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' \
  "$MOD/go.mod")"
[[ -n "$VERSION" ]] || die "tools/actionlint/go.mod does not require $TOOL"
OUT_BIN="$CACHE/actionlint/$VERSION/bin"
LDFLAGS="-s -w -X $TOOL.version=$VERSION -X '$TOOL.installedFrom=built by scripts/check-workflows.sh'"

recipe_hash() {
  { echo "recipe-format 1"; echo "$VERSION"; echo "$LDFLAGS"; go env GOVERSION
    echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS"; cat "$MOD/go.mod" "$MOD/go.sum"; } | sha256sum | cut -d' ' -f1
}

cache_is_valid() {
  [[ -f "$OUT_BIN/SHA256SUMS" && -f "$OUT_BIN/RECIPE" && "$(cat "$OUT_BIN/RECIPE")" == "$1" ]] || return 1
  (cd "$OUT_BIN" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1) || {
    step "cached actionlint in $OUT_BIN does not match its SHA256SUMS: rebuilding"
    return 1
  }
}

build() {
  local recipe="$1" tmp="$CACHE/actionlint/$VERSION/bin.tmp.$$" ticker
  rm -rf "$CACHE/actionlint/$VERSION"/bin.tmp.*
  mkdir -p "$tmp"
  step "building actionlint $VERSION from the Go module proxy ($(go env GOVERSION), checked against tools/actionlint/go.sum)"
  (cd "$MOD" && go mod download 2>&1 | sed -u 's/^/    /') || die "could not download the modules of tools/actionlint"
  ( exec 9>&-; while sleep 20; do step "... still building actionlint"; done ) &
  ticker=$!
  if ! (cd "$MOD" && go build -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/actionlint" "$TOOL/cmd/actionlint"); then
    kill "$ticker" 2>/dev/null || true
    rm -rf "$tmp"
    die "go build of actionlint (tools/actionlint) failed"
  fi
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  "$tmp/actionlint" -version | head -n1 | grep -qx "$VERSION" || die "the built actionlint does not report $VERSION"
  (cd "$tmp" && sha256sum actionlint > SHA256SUMS)
  printf '%s\n' "$recipe" > "$tmp/RECIPE"
  rm -rf "$OUT_BIN"
  mv "$tmp" "$OUT_BIN"
  step "built into $OUT_BIN (sha256 $(cut -c1-12 "$OUT_BIN/SHA256SUMS"))"
}

mkdir -p "$CACHE/actionlint"
exec 9>"$CACHE/actionlint/.install.lock"
flock 9   # one build at a time per cache
recipe="$(recipe_hash)"
if cache_is_valid "$recipe"; then
  step "actionlint $VERSION built and verified (sha256) in $OUT_BIN"
else
  build "$recipe"
fi
exec 9>&-

files=("$@")
if ((${#files[@]} == 0)); then
  for f in "$REPO_ROOT"/examples/github-actions/*.yml "$REPO_ROOT"/.github/workflows/*.yml; do
    [[ -f "$f" ]] && files+=("$f")
  done
fi
((${#files[@]})) || die "no workflow files to check (examples/github-actions/*.yml)"
if command -v shellcheck >/dev/null 2>&1; then
  step "shellcheck found: run: scripts are checked too"
else
  step "shellcheck not on PATH: run: scripts are not checked (apt-get install shellcheck adds it)"
fi
step "actionlint ${files[*]#"$REPO_ROOT/"}"
(cd "$REPO_ROOT" && "$OUT_BIN/actionlint" -no-color "${files[@]}") || die "actionlint found problems (above)"
step "check-workflows: ok (${#files[@]} workflow file(s))"
