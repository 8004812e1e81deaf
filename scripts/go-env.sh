# shellcheck shell=bash
# The Go environment of the project's Go builds and checks (scripts/install-pulumi.sh,
# scripts/check-go.sh, scripts/prune.sh; lakehouse_platform/artifacts/gobuild.py uses the same GO_CACHES). Sourced; sets
# CACHE and GO_CACHES. Module and build caches live outside the repo (CI runs in a fresh clone on the same machine):
#   ${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}/go/{mod,build,path}
CACHE="${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}"
GO_CACHES="$CACHE/go"
export GOMODCACHE="$GO_CACHES/mod"
export GOCACHE="$GO_CACHES/build"
export GOPATH="$GO_CACHES/path"
export GOFLAGS="-modcacherw -buildvcs=false"
export CGO_ENABLED=0
unset GOOS GOARCH GOWORK 2>/dev/null || true
export GOWORK=off
