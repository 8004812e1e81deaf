#!/bin/bash
# run-trino as trinodb/trino has it: Trino's launcher in the foreground on /etc/trino, the node id from the
# host name unless node.properties sets one.
set -euo pipefail
launcher_opts=(--etc-dir /etc/trino)
if ! grep -s -q 'node.id' /etc/trino/node.properties; then
  launcher_opts+=("-Dnode.id=${HOSTNAME}")
fi
exec /usr/lib/trino/bin/launcher run "${launcher_opts[@]}" "$@"
