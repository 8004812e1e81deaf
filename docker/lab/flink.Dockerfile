# Flink for the lab (job manager, task manager, and the state init job), from the native target's artifact:
# the distribution PyPI serves as the apache-flink-libraries sdist (lib/ and bin/bash-java-utils.jar) plus the
# jars of infra/services/flink.jars.json (Iceberg's Flink runtime, AWS bundle, Hadoop client, Kafka connector).
# What the lab relies on (as the flink image): /opt/flink/lib with every jar, `jobmanager` / `taskmanager` as
# the command, FLINK_PROPERTIES as the configuration, user flink uid:gid 9999:9999. The entrypoint starts the
# JVM as the native target does: BashJavaUtils derives the memory flags, then one exec'd java process.
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates curl openjdk-17-jre-headless \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid=9999 flink && useradd --system --home-dir /opt/flink --uid=9999 --gid=flink flink
COPY lib/ /opt/flink/lib/
COPY bin/ /opt/flink/bin/
COPY classpath log4j-console.properties /opt/flink/
COPY flink-entrypoint.sh /opt/flink/bin/docker-entrypoint.sh
RUN mkdir -p /opt/flink/conf /opt/flink/log /opt/flink/plugins && chown -R flink:flink /opt/flink
ENV FLINK_HOME=/opt/flink
WORKDIR /opt/flink
USER flink
ENTRYPOINT ["/opt/flink/bin/docker-entrypoint.sh"]
CMD ["help"]
