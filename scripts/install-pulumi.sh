#!/usr/bin/env bash
# Build the Pulumi CLI and the project's Python language host (Go modules under tools/) and install
# them into <repo>/.tools/bin. Idempotent: a verified cached build is reused (about a second);
# otherwise the first build takes several minutes.
#
# `make pulumi` runs it only where the project runs its own build: no pulumi of yours on PATH fits (the
# supported range and its Python plugins: lakehouse_platform/control/toolchain.py), or PULUMI=project asks for it.
#
#   bash scripts/install-pulumi.sh        # from any directory: build/install the project's CLI regardless
#   . scripts/pulumi-env.sh               # then: pulumi version (the CLI the project chose)
#
# Sources (modules from the Go module proxy, checked against the committed go.sum, -mod=readonly):
#   tools/pulumi-cli/               wrapper module: pkg/v3 + sdk/v3 at one tag, `tool` .../cmd/pulumi
#   tools/pulumi-language-python/   the language host (main.go says why it is the project's own)
# The Pulumi version is the one tools/pulumi-cli/go.mod requires; both go.mod files must agree.
#
# Caches live outside the repo (CI runs in a fresh clone on the same machine):
#   ${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}/go/{mod,build}   Go caches (scripts/go-env.sh)
#   .../pulumi/<version>/bin       built binaries + SHA256SUMS + RECIPE (hash of the sources)
#
# Installed into .tools/bin:
#   pulumi                          CLI (github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
#   pulumi-language-python          Python language host (tools/pulumi-language-python)
#   pulumi-language-python-exec     program launcher script   (from the sdk/v3 module zip)
#   pulumi-resource-pulumi-python   dynamic-provider launcher (from the sdk/v3 module zip)
# pulumi-analyzer-policy-python is not shipped in the sdk/v3 module at this tag and is not needed:
# the CLI runs Python policy packs through the language host's RunPlugin RPC.
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"
# shellcheck source=scripts/go-env.sh
. "$SCRIPT_DIR/go-env.sh"   # CACHE, GOMODCACHE, GOCACHE, GOFLAGS, CGO_ENABLED=0, GOWORK=off
CLI_MOD="$REPO_ROOT/tools/pulumi-cli"
HOST_MOD="$REPO_ROOT/tools/pulumi-language-python"
TOOLS_BIN="$REPO_ROOT/.tools/bin"

BINARIES=(pulumi pulumi-language-python)
SCRIPTS=(pulumi-language-python-exec pulumi-resource-pulumi-python)

START=$SECONDS
step() { printf '==> [%4ss] %s\n' "$((SECONDS - START))" "$*"; }
note() { printf '    %s\n' "$*"; }
die() { printf 'install-pulumi: error: %s\n' "$*" >&2; exit 1; }
TICKER="" BUILD_TMP=""
stop_ticker() { [[ -z "$TICKER" ]] || { kill "$TICKER" 2>/dev/null; wait "$TICKER" 2>/dev/null; } || true; TICKER=""; }
cleanup() { stop_ticker; [[ -z "$BUILD_TMP" ]] || rm -rf "$BUILD_TMP"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Version of module $2 that go.mod $1 requires (block or single-line require).
required_version() {
  [[ -f "$1" ]] || die "missing $1"
  awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"
}

PULUMI_VERSION="$(required_version "$CLI_MOD/go.mod" github.com/pulumi/pulumi/pkg/v3)"
[[ -n "$PULUMI_VERSION" ]] || die "$CLI_MOD/go.mod does not require github.com/pulumi/pulumi/pkg/v3"
for pin in "$CLI_MOD/go.mod" "$HOST_MOD/go.mod"; do
  got="$(required_version "$pin" github.com/pulumi/pulumi/sdk/v3)"
  [[ "$got" == "$PULUMI_VERSION" ]] ||
    die "${pin#"$REPO_ROOT/"} requires github.com/pulumi/pulumi/sdk/v3 ${got:-(none)}, wanted $PULUMI_VERSION (the pkg/v3 tag of tools/pulumi-cli/go.mod)"
done

VERSION_DIR="$CACHE/pulumi/$PULUMI_VERSION"
OUT_BIN="$VERSION_DIR/bin"
LDFLAGS="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION"

# Hash of everything that determines the build output; a cached build whose RECIPE differs is
# rebuilt. Test files do not change the binaries and are left out.
recipe_hash() {
  local f
  {
    echo "recipe-format 2"
    echo "$PULUMI_VERSION"
    echo "$LDFLAGS"
    echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS"
    printf '%s\n' "${BINARIES[@]}" "${SCRIPTS[@]}"
    for f in "$CLI_MOD"/go.mod "$CLI_MOD"/go.sum "$CLI_MOD"/*.go \
             "$HOST_MOD"/go.mod "$HOST_MOD"/go.sum "$HOST_MOD"/*.go "$HOST_MOD"/*.py; do
      [[ -f "$f" && "$f" != *_test.go ]] || continue
      echo "== ${f#"$REPO_ROOT/"}"
      cat "$f"
    done
  } | sha256sum | cut -d' ' -f1
}

cache_is_valid() {
  local recipe="$1" f
  [[ -f "$OUT_BIN/SHA256SUMS" && -f "$OUT_BIN/RECIPE" ]] || return 1
  [[ "$(cat "$OUT_BIN/RECIPE")" == "$recipe" ]] || { note "cached build recipe changed"; return 1; }
  for f in "${BINARIES[@]}" "${SCRIPTS[@]}"; do
    grep -q "  $f\$" "$OUT_BIN/SHA256SUMS" || { note "cached build lacks $f"; return 1; }
  done
  (cd "$OUT_BIN" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1) || {
    note "cached binaries in $OUT_BIN do not match SHA256SUMS"
    return 1
  }
}

# Hardlink (or copy) every file listed in SHA256SUMS into .tools/bin; files already identical are
# left alone. Replacement is atomic (rename), so a running pulumi is not disturbed.
install_into_tools() {
  local f changed=0
  mkdir -p "$TOOLS_BIN"
  while read -r _ f; do
    f="${f#\*}"
    if [[ -e "$TOOLS_BIN/$f" ]] && { [[ "$TOOLS_BIN/$f" -ef "$OUT_BIN/$f" ]] || cmp -s "$TOOLS_BIN/$f" "$OUT_BIN/$f"; }; then
      continue
    fi
    rm -f "$TOOLS_BIN/.$f.tmp"
    ln "$OUT_BIN/$f" "$TOOLS_BIN/.$f.tmp" 2>/dev/null || cp "$OUT_BIN/$f" "$TOOLS_BIN/.$f.tmp"
    chmod 0755 "$TOOLS_BIN/.$f.tmp"
    mv -f "$TOOLS_BIN/.$f.tmp" "$TOOLS_BIN/$f"
    changed=$((changed + 1))
  done < "$OUT_BIN/SHA256SUMS"
  if ((changed)); then
    step "installed $changed file(s) into $TOOLS_BIN"
  else
    step "$TOOLS_BIN already up to date"
  fi
}

build_all() {
  local recipe="$1" tmp sdk_dir mod f src got
  command -v go >/dev/null 2>&1 || die "go is not on PATH (Go >= 1.26 is needed to build pulumi)"
  command -v sha256sum >/dev/null 2>&1 || die "sha256sum is not on PATH"
  step "building pulumi $PULUMI_VERSION from the Go module proxy ($(go env GOVERSION), cache $CACHE)"

  tmp="$VERSION_DIR/bin.tmp.$$"

  step "downloading Go modules, checked against the committed go.sum (cold: about a minute)"
  for mod in "$CLI_MOD" "$HOST_MOD"; do
    (cd "$mod" && go mod download 2>&1 | sed -u 's/^/    /') ||
      die "could not download the modules of ${mod#"$REPO_ROOT/"} (GOPROXY=$(go env GOPROXY))"
  done
  for mod in "$CLI_MOD:pkg" "$CLI_MOD:sdk" "$HOST_MOD:sdk"; do
    got="$(cd "${mod%:*}" && go list -mod=readonly -m -f '{{.Version}}' "github.com/pulumi/pulumi/${mod##*:}/v3")"
    [[ "$got" == "$PULUMI_VERSION" ]] ||
      die "module graph of ${mod%:*} selected github.com/pulumi/pulumi/${mod##*:}/v3 $got, wanted $PULUMI_VERSION"
  done
  sdk_dir="$(cd "$HOST_MOD" && go list -mod=readonly -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)"
  [[ -n "$sdk_dir" && -d "$sdk_dir" ]] || die "no module directory for github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION"
  note "sdk: $sdk_dir"

  # Leftovers of interrupted runs (the lock is held: no other build is under way), and build/, the
  # generated wrapper module of earlier versions of this script.
  rm -rf "$VERSION_DIR"/bin.tmp.* "$VERSION_DIR/build"
  mkdir -p "$tmp"
  BUILD_TMP="$tmp"   # removed on any exit until it becomes $OUT_BIN
  # progress ticker; its sleep must not hold the output pipe or the lock (fd 9), and ends with it
  (
    exec 9>&-
    trap '[[ -z "${nap:-}" ]] || kill "$nap" 2>/dev/null; exit 0' TERM
    while :; do
      sleep 60 </dev/null >/dev/null 2>&1 & nap=$!
      wait "$nap"
      step "... still building"
    done
  ) &
  TICKER=$!
  step "building pulumi CLI $PULUMI_VERSION (first run takes several minutes)"
  (cd "$CLI_MOD" && go build -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/pulumi" \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi) || die "go build of the Pulumi CLI (tools/pulumi-cli) failed"
  step "building pulumi-language-python"
  (cd "$HOST_MOD" && go build -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/pulumi-language-python" .) ||
    die "go build of the language host (tools/pulumi-language-python) failed"
  stop_ticker

  step "copying helper scripts from the sdk/v3 module"
  for f in "${SCRIPTS[@]}" pulumi-analyzer-policy-python; do
    src="$(find "$sdk_dir/python" -type f -name "$f" -not -path '*/testdata/*' | head -n1)"
    if [[ -z "$src" ]]; then
      if [[ "$f" == pulumi-analyzer-policy-python ]]; then
        note "$f: not in sdk/v3@$PULUMI_VERSION (not needed: policy packs run via the language host)"
        continue
      fi
      die "$f not found under $sdk_dir/python"
    fi
    cp "$src" "$tmp/$f"
    chmod 0755 "$tmp/$f"
    note "$f <- ${src#"$sdk_dir/"}"
  done

  "$tmp/pulumi" version | grep -qx "$PULUMI_VERSION" || die "built pulumi does not report $PULUMI_VERSION"
  "$tmp/pulumi-language-python" --version | grep -qx "$PULUMI_VERSION" ||
    die "built pulumi-language-python does not report $PULUMI_VERSION"

  (cd "$tmp" && sha256sum -- * > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
  printf '%s\n' "$recipe" > "$tmp/RECIPE"
  rm -rf "$OUT_BIN.old"
  [[ -d "$OUT_BIN" ]] && mv "$OUT_BIN" "$OUT_BIN.old"
  mv "$tmp" "$OUT_BIN"
  BUILD_TMP=""
  rm -rf "$OUT_BIN.old"
  step "built into $OUT_BIN"
}

main() {
  mkdir -p "$CACHE/pulumi"
  exec 9>"$CACHE/pulumi/.install.lock"
  flock 9   # one install/build at a time per cache

  local recipe
  recipe="$(recipe_hash)"
  if cache_is_valid "$recipe"; then
    step "pulumi $PULUMI_VERSION already built and verified (sha256) in $OUT_BIN"
  else
    build_all "$recipe"
  fi
  install_into_tools
  step "done in $((SECONDS - START))s: $("$TOOLS_BIN/pulumi" version) at $TOOLS_BIN/pulumi"
  note "use it with:  . $REPO_ROOT/scripts/pulumi-env.sh"
}

main "$@"
