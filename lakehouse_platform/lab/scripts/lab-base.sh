#!/usr/bin/env bash
# The lab's base image without a container registry (issue 19): a minimal Debian bookworm from Debian's own
# mirror (debootstrap --variant=minbase), imported into the engine under <image> (the stack's lab.base_image).
#
#   lakehouse lab base  (runs: lab-base.sh <name:tag>)
#
# Skipped when the engine already has <name:tag>. The mirror is the one apt uses on this host (read from
# /etc/apt/sources.list*), and the image's apt sources are the host's, so builds on it reach the same mirror.
# Needs root (debootstrap) and an engine (DOCKER_HOST; lakehouse engine start makes one).
set -euo pipefail
image="${1:?usage: $0 <name:tag>}"
# What the package sits in (site-packages, or a checkout): this script is lakehouse_platform/lab/scripts/.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
state="$(PYTHONPATH="$root" python3 -c 'from lakehouse_platform.paths import state_root; print(state_root())')"
say() { echo "==> lab-base: $*" >&2; }

if docker image inspect "$image" >/dev/null 2>&1; then
  say "$image is in the engine already: nothing to do"
  exit 0
fi

mirror_of_host() {
  # The first Debian mirror apt uses for bookworm's main archive (deb822 .sources first, then one-line lists).
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm( |$|\n)/ && /Components:[^\n]*main/ {
           if (match($0, /URIs: *[^ \n]+/)) { split(substr($0, RSTART, RLENGTH), u, / +/); print u[2]; exit } }' "$file"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" && $3 == "bookworm" {for (i = 4; i <= NF; i++) if ($i == "main") {print $2; exit}}' || true
}
mirror="$(mirror_of_host | head -n 1 || true)"
[ -n "$mirror" ] || { say "no bookworm main mirror in /etc/apt/sources.list*"; exit 1; }
command -v debootstrap >/dev/null || {
  say "installing debootstrap (Debian's package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2
}

work="$state/lab-base"
rootfs="$work/rootfs"
rm -rf "$rootfs"
mkdir -p "$work"
trap 'rm -rf "$rootfs"' EXIT
started=$SECONDS
say "debootstrap --variant=minbase bookworm from $mirror (about 1.5 min, ~200 MB; its I: lines are the progress)"
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" 2>&1 | grep --line-buffered -E '^(I|W|E):' >&2
# What the image should not carry: downloaded packages and package lists (builds run apt-get update).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/debootstrap
# The host's apt sources (the same mirror, bookworm-updates and security as the host has them).
if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
  rm -f "$rootfs/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/*.sources "$rootfs/etc/apt/sources.list.d/"
fi
say "debootstrap done in $(( SECONDS - started )) s ($(du -sm "$rootfs" | cut -f1) MB); importing as $image"
tar --numeric-owner -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["bash"]' \
  --message "debootstrap --variant=minbase bookworm $mirror (lakehouse lab base)" - "$image" >&2
say "$image imported; $(( SECONDS - started )) s in all"
