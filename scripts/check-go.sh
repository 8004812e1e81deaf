#!/usr/bin/env bash
# Checks of the project's Go modules (tools/*/go.mod: the Pulumi CLI wrapper and the Python language
# host): gofmt -l (any file listed fails), go.mod/go.sum tidy, go vet, go test. Needs Go, and the
# modules in the cache or the Go module proxy; `make unit` does not run this. From any directory:
#
#   bash scripts/check-go.sh
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"
# shellcheck source=scripts/go-env.sh
. "$SCRIPT_DIR/go-env.sh"

die() { printf 'check-go: error: %s\n' "$*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "go is not on PATH (Go >= 1.26 is needed)"
GOFMT="$(go env GOROOT)/bin/gofmt"

modules=()
for f in "$REPO_ROOT"/tools/*/go.mod; do
  [[ -f "$f" ]] && modules+=("$(dirname -- "$f")")
done
((${#modules[@]})) || die "no Go modules under $REPO_ROOT/tools"

failed=()
printf '==> gofmt -l tools\n'
unformatted="$(cd "$REPO_ROOT" && "$GOFMT" -l tools)" || failed+=("gofmt")
if [[ -n "$unformatted" ]]; then
  printf 'not gofmt-clean (run: gofmt -w FILE):\n%s\n' "$unformatted"
  failed+=("gofmt")
fi
for mod in "${modules[@]}"; do
  name="tools/${mod##*/}"
  printf '==> %s: go mod tidy -diff\n' "$name"
  (cd "$mod" && go mod tidy -diff) || failed+=("$name: go.mod/go.sum not tidy")
  printf '==> %s: go vet ./...\n' "$name"
  (cd "$mod" && go vet -mod=readonly ./...) || failed+=("$name: go vet")
  printf '==> %s: go test ./...\n' "$name"
  (cd "$mod" && go test -mod=readonly -count=1 ./...) || failed+=("$name: go test")
done

if ((${#failed[@]})); then
  printf 'check-go: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
printf 'check-go: ok (%d modules: gofmt, tidy, vet, test)\n' "${#modules[@]}"
