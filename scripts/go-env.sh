# shellcheck shell=bash
# The Go environment of the project's Go builds and checks (scripts/install-pulumi.sh,
# scripts/check-go.sh). Sourced; sets CACHE. Module and build caches live outside the repo (CI runs
# in a fresh clone on the same machine):
#   ${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}/go/{mod,build,path}
CACHE="${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}"
export GOMODCACHE="$CACHE/go/mod"
export GOCACHE="$CACHE/go/build"
export GOPATH="$CACHE/go/path"
export GOFLAGS="-modcacherw -buildvcs=false"
export CGO_ENABLED=0
unset GOOS GOARCH GOWORK 2>/dev/null || true
export GOWORK=off
