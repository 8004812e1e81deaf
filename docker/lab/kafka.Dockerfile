# Kafka for the lab (the broker and the topics job), from the native target's artifact: Kafka's classpath
# from the jar lock infra/services/streams_locks/kafka-runtime.lock.json. What the lab relies on (as
# apache/kafka): configuration from KAFKA_* variables only (the image's mapping: `.` is `_`, `_` is `__`,
# `-` is `___`), storage formatted with CLUSTER_ID on first start, KAFKA_HEAP_OPTS, data under
# /var/lib/kafka/data (a volume), /opt/kafka/bin/kafka-topics.sh, bash for the health check, user appuser 1000.
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates openjdk-17-jre-headless \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 1000 appuser && useradd --uid 1000 --gid 1000 --home-dir /opt/kafka --shell /bin/bash appuser
COPY libs/ /opt/kafka/libs/
COPY log4j2.properties /opt/kafka/config/
COPY kafka-run.sh /opt/kafka/bin/kafka-run.sh
COPY kafka-topics.sh /opt/kafka/bin/kafka-topics.sh
RUN mkdir -p /var/lib/kafka/data /opt/kafka/config && chown -R appuser:appuser /var/lib/kafka /opt/kafka/config
USER appuser
VOLUME /var/lib/kafka/data
WORKDIR /opt/kafka
ENTRYPOINT ["/opt/kafka/bin/kafka-run.sh"]
