# The platform's one operations image: every piece of the project's own Python that runs in a container (the
# metrics exporter, the catalog gate, the maintenance scheduler, the catalog backups), on docker and aws alike.
# Built from this repository (the docker target's docker.Image; the context is what .dockerignore admits: the
# `lakehouse_platform/runtime` package, the watchdog status reader, the lock), on the project's hash-pinned lock
# (docker/operations.lock, `make lock`, from pyproject.toml's `operations` group). Nothing is installed when a
# container starts. Classic builder (DOCKER_BUILDKIT=0): no BuildKit-only syntax.
#
# BASE       a Debian bookworm image (lab.base_image; `make lab-base` makes one where no registry is reachable)
# PG_MAJOR   the PostgreSQL major the lab's server runs: the backups' pg_dump must be of it. Debian's archive
#            serves 15 on bookworm; another major comes from PostgreSQL's own apt repository (the one the
#            upstream postgres image is built from), which needs that repository reachable.
# CA_CERTIFICATES  the host's extra CA certificates (PEM), trusted by apt, pip and Python alike: builds behind
#            a TLS-intercepting proxy work as the host does. Proxies: the standard http_proxy/https_proxy/
#            no_proxy build args (Docker passes them through without baking them into the image).
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG PG_MAJOR=15
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates \
    && if ! apt-cache show "postgresql-client-$PG_MAJOR" >/dev/null 2>&1; then \
         apt-get install -y -q --no-install-recommends curl \
         && install -d /usr/share/postgresql-common/pgdg \
         && curl -fsSL -o /usr/share/postgresql-common/pgdg/apt.postgresql.org.asc \
              https://www.postgresql.org/media/keys/ACCC4CF8.asc \
         && echo "deb [signed-by=/usr/share/postgresql-common/pgdg/apt.postgresql.org.asc] https://apt.postgresql.org/pub/repos/apt bookworm-pgdg main" \
              > /etc/apt/sources.list.d/pgdg.list \
         && apt-get update -q; \
       fi \
    && apt-get install -y -q --no-install-recommends python3 python3-venv "postgresql-client-$PG_MAJOR" \
    && rm -rf /var/lib/apt/lists/*
COPY docker/operations.lock /tmp/operations.lock
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --require-hashes --no-deps \
         --only-binary=:all: -r /tmp/operations.lock \
    && rm /tmp/operations.lock
# One user for every operations container (uid:gid 10001:10001); the state they share is handed to it
# (lakehouse_platform/services/operations_support.py: OPERATIONS_USER). /etc/lakehouse is its: an aws task writes its config
# there before exec'ing (Fargate has no file mounts).
RUN groupadd --gid 10001 lakehouse \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin lakehouse \
    && install -d -o 10001 -g 10001 /etc/lakehouse
COPY lakehouse_platform /opt/lakehouse/lakehouse_platform
WORKDIR /opt/lakehouse
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONPATH=/opt/lakehouse PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
ENTRYPOINT []
CMD ["python", "-m", "lakehouse_platform.runtime", "--help"]
