"""The platform's services: one module each, holding the service's whole definition.

``DEFAULT_SERVICES`` is the chapter's lab, in start order; stacks enable, disable and adjust them.
"""

from __future__ import annotations

from infra.services import flink, kafka, lakekeeper, polaris, postgres, rest_fixture, seaweedfs, trino

DEFAULT_SERVICES: dict[str, dict] = {
    seaweedfs.NAME: seaweedfs.DEFAULT,
    seaweedfs.BUCKET_JOB: seaweedfs.BUCKET_JOB_DEFAULT,
    postgres.NAME: postgres.DEFAULT,
    rest_fixture.INIT_JOB: rest_fixture.INIT_JOB_DEFAULT,
    rest_fixture.NAME: rest_fixture.DEFAULT,
    polaris.BOOTSTRAP_JOB: polaris.BOOTSTRAP_JOB_DEFAULT,
    polaris.NAME: polaris.DEFAULT,
    lakekeeper.MIGRATE_JOB: lakekeeper.MIGRATE_JOB_DEFAULT,
    lakekeeper.NAME: lakekeeper.DEFAULT,
    lakekeeper.LOOPBACK: lakekeeper.LOOPBACK_DEFAULT,
    trino.NAME: trino.DEFAULT,
    flink.JOBMANAGER: flink.JOBMANAGER_DEFAULT,
    flink.TASKMANAGER: flink.TASKMANAGER_DEFAULT,
    kafka.KAFKA: kafka.KAFKA_DEFAULT,
    kafka.CONNECT: kafka.CONNECT_DEFAULT,
}

# A job belongs to the service it prepares: enabling or disabling the service carries the job along
# unless the stack says otherwise for the job itself.
JOB_OF = {
    seaweedfs.BUCKET_JOB: seaweedfs.NAME,
    rest_fixture.INIT_JOB: rest_fixture.NAME,
    polaris.BOOTSTRAP_JOB: polaris.NAME,
    lakekeeper.MIGRATE_JOB: lakekeeper.NAME,
    lakekeeper.LOOPBACK: lakekeeper.NAME,
}
