# PostgreSQL for the lab, from the native target's source: Debian's postgresql-<major> (PG_MAJOR: the major the
# native artifact resolved, the newest Debian offers up to the pin). What the lab relies on (as the postgres
# image's docker-entrypoint.sh): POSTGRES_USER/POSTGRES_PASSWORD initialise an empty data directory, the SQL of
# /docker-entrypoint-initdb.d runs once on it, the server listens on every interface with scram-sha-256 for
# network clients, `postgres -c ...` as the command, data under /var/lib/postgresql (a volume), pg_isready.
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ARG PG_MAJOR=15
ENV DEBIAN_FRONTEND=noninteractive
# Debian's package would create a cluster of its own on install; the entrypoint makes the only one.
RUN mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates "postgresql-$PG_MAJOR" \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/* \
    && sed -ri "s!^#?(listen_addresses)\s*=\s*\S+.*!\1 = '*'!" "/usr/share/postgresql/$PG_MAJOR/postgresql.conf.sample" \
    && mkdir -p /docker-entrypoint-initdb.d /var/run/postgresql && chown postgres:postgres /var/run/postgresql
ENV PG_MAJOR=$PG_MAJOR PATH=/usr/lib/postgresql/$PG_MAJOR/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/$PG_MAJOR/docker LANG=C.UTF-8
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
