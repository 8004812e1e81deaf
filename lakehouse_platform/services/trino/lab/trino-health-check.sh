#!/bin/bash
# health-check as trinodb/trino has it: healthy once /v1/info says the server is no longer starting.
set -euo pipefail
port="$(sed -n 's/^http-server\.http\.port=//p' /etc/trino/config.properties 2>/dev/null || true)"
info="$(curl -fsS "http://localhost:${port:-8080}/v1/info")" || exit 1
[[ "$info" =~ \"starting\":false ]]
