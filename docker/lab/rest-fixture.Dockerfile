# The Iceberg REST fixture for the lab, from the native target's artifact: the shaded fixture jar from Maven
# Central (org.apache.iceberg:iceberg-open-api) and PostgreSQL's JDBC driver beside it. What the lab relies on
# (as apache/iceberg-rest-fixture's docker/iceberg-rest-fixture/Dockerfile): /usr/lib/iceberg-rest/
# iceberg-rest-adapter.jar, user iceberg uid:gid 1000:1000, the JDBC catalog by default, `java -jar` as the
# command, curl for the health check. JRE: Debian's openjdk-17-jre-headless (upstream: Zulu 17).
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates curl openjdk-17-jre-headless \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/*
RUN groupadd iceberg --gid 1000 && useradd iceberg --uid 1000 --gid 1000 --create-home
WORKDIR /usr/lib/iceberg-rest
COPY --chown=iceberg:iceberg iceberg-rest-adapter.jar postgresql.jar /usr/lib/iceberg-rest/
ENV CATALOG_CATALOG__IMPL=org.apache.iceberg.jdbc.JdbcCatalog CATALOG_URI=jdbc:sqlite:file::memory:?cache=shared \
    CATALOG_JDBC_USER=user CATALOG_JDBC_PASSWORD=password REST_PORT=8181 LANG=C.UTF-8
USER iceberg:iceberg
CMD ["java", "-jar", "iceberg-rest-adapter.jar"]
