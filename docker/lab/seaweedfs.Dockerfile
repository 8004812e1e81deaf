# SeaweedFS for the lab, built from the native target's artifact: `weed` built from the Go module proxy
# (infra/services/seaweedfs.py). What the lab relies on (as chrislusf/seaweedfs): `weed` on PATH and as the
# entrypoint (the renderer's command is `server ...`; the bucket job runs `/bin/sh -c` with `weed shell`),
# wget for the health check, data under /data. Build context: staged by infra/lab/images.py.
ARG BASE=debian:bookworm-20260202-slim
FROM ${BASE}
ARG CA_CERTIFICATES=
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates wget \
    && if [ -n "$CA_CERTIFICATES" ]; then printf '%s\n' "$CA_CERTIFICATES" > /usr/local/share/ca-certificates/host.crt; fi \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/*
COPY weed /usr/bin/weed
RUN mkdir -p /data /etc/seaweedfs && weed version
VOLUME /data
ENTRYPOINT ["/usr/bin/weed"]
