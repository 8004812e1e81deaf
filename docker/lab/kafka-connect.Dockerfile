# Kafka Connect for the lab, from the native target's artifact: the worker's Kafka classpath and both plugin
# directories (Debezium's PostgreSQL connector, the Iceberg sink) from jar locks. What the lab relies on (as
# quay.io/debezium/connect): the plugin path /kafka/connect (one directory per plugin), the worker's settings
# from BOOTSTRAP_SERVERS, GROUP_ID, CONFIG_/OFFSET_/STATUS_STORAGE_TOPIC, OFFSET_FLUSH_INTERVAL_MS and
# CONNECT_<KEY> (lower-cased, `_` as `.`), HEAP_OPTS, curl for the health check, user kafka 1001.
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates curl openjdk-17-jre-headless \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 1001 kafka && useradd --uid 1001 --gid 1001 --home-dir /kafka --shell /bin/bash kafka
COPY libs/ /kafka/libs/
COPY plugins/ /kafka/connect/
COPY log4j2.properties /kafka/config/
COPY connect-run.sh /kafka/bin/connect-run.sh
RUN mkdir -p /kafka/config && chown -R kafka:kafka /kafka/config
USER kafka
WORKDIR /kafka
ENTRYPOINT ["/kafka/bin/connect-run.sh"]
