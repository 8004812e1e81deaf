#!/usr/bin/env bash
# Frees the disk that only a build needs: the Go module and build caches, <cache>/go (scripts/go-env.sh,
# lakehouse_platform/artifacts/gobuild.py), and <cache>/artifacts/go where a release before 0.4.0 left a second pair.
# Every binary built from them stays cached with its checksums (the Pulumi CLI under <cache>/pulumi, SeaweedFS
# under <cache>/artifacts), so `make up` and `make pulumi` build nothing after a prune; the next build of
# another pin, and `make lint`'s Go checks, download and compile from scratch (minutes).
#   <cache> = ${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}
set -euo pipefail
# shellcheck source=scripts/go-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"   # CACHE, GO_CACHES: where the builds put them
freed=0
for dir in "$GO_CACHES" "$CACHE/artifacts/go"; do
  [ -d "$dir" ] || continue
  size=$(du -sk "$dir" | cut -f1)
  chmod -R u+w "$dir"  # Go writes its module cache read-only unless -modcacherw (matters to a non-root user)
  rm -rf "$dir"
  freed=$((freed + size))
  echo "==> prune: removed $dir ($((size / 1024)) MiB)"
done
echo "==> prune: $((freed / 1024)) MiB freed; built binaries and artifacts kept"
