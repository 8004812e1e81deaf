# Prometheus for the lab, from the native target's source: Debian's prometheus package (bookworm's), without
# recommends (no node exporter). What the lab relies on (as prom/prometheus): the binary as the entrypoint (the
# renderer's command is flags only), /etc/prometheus for its files, /prometheus for the TSDB (a volume), user
# nobody, wget for the health check.
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates wget prometheus \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /etc/prometheus /prometheus && chown -R nobody:nogroup /etc/prometheus /prometheus
USER nobody
VOLUME /prometheus
WORKDIR /prometheus
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
