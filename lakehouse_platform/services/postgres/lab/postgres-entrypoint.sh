#!/bin/bash
# The lab's PostgreSQL entrypoint: what the postgres image's docker-entrypoint.sh does that the lab relies on.
set -Eeuo pipefail
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  # The volume arrives root-owned: hand it to the server's user, then run as it.
  mkdir -p "$PGDATA"
  chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is not set: the server would take network clients without a password}"
  user="${POSTGRES_USER:-postgres}"
  initdb -D "$PGDATA" --username="$user" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  # The init SQL against a server no network client can reach yet (unix socket only).
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) echo "docker-entrypoint: running $f"; psql -v ON_ERROR_STOP=1 --username "$user" --no-password --no-psqlrc --dbname postgres -f "$f" ;;
      *.sh) echo "docker-entrypoint: sourcing $f"; . "$f" ;;
      *) [ -e "$f" ] && echo "docker-entrypoint: ignoring $f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo "docker-entrypoint: initialised $PGDATA"
fi
exec "$@"
