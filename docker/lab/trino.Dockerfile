# Trino for the lab, from the native target's artifact: the trino-server tarball from Maven Central (the
# newest there, with the iceberg and password-authenticators plugins kept) and the JDK (>= 24) the native
# target runs it on. What the lab relies on (as trinodb/trino's core/docker): /usr/lib/trino with
# bin/run-trino as the command and bin/health-check, /etc/trino (node.properties and log.properties by
# default; the renderer uploads the rest), /data/trino, user trino 1000.
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates curl less \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/*
RUN groupadd trino --gid 1000 && useradd trino --uid 1000 --gid 1000 --create-home
COPY jdk/ /usr/lib/jvm/trino-jdk/
COPY trino-server/ /usr/lib/trino/
COPY trino-run.sh /usr/lib/trino/bin/run-trino
COPY trino-health-check.sh /usr/lib/trino/bin/health-check
RUN mkdir -p /etc/trino/catalog /data/trino \
    && printf 'node.environment=docker\nnode.data-dir=/data/trino\nplugin.dir=/usr/lib/trino/plugin\n' > /etc/trino/node.properties \
    && printf 'io.trino=INFO\n' > /etc/trino/log.properties \
    && chown -R trino:trino /etc/trino /data/trino
ENV JAVA_HOME=/usr/lib/jvm/trino-jdk PATH=/usr/lib/jvm/trino-jdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8
USER trino:trino
CMD ["/usr/lib/trino/bin/run-trino"]
