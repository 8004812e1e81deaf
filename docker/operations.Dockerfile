# The platform's operations image: the processes the operating layers run (the metrics exporter), from this
# repository, on the project's pinned, hash-checked dependencies. Built by the docker target (pulumi-docker
# docker.Image) as services.lakehouse-exporter.image; on aws, built and pushed to the registry that image names.
FROM python:3.11.11-slim
COPY docker/operations-requirements.lock /tmp/operations-requirements.lock
RUN pip install --no-cache-dir --disable-pip-version-check --require-hashes --no-deps \
        -r /tmp/operations-requirements.lock \
    && rm /tmp/operations-requirements.lock
COPY infra /opt/lakehouse/infra
WORKDIR /opt/lakehouse
ENV PYTHONPATH=/opt/lakehouse PYTHONUNBUFFERED=1
# nobody: watching needs no privilege
USER 65534:65534
ENTRYPOINT []
