"""What the probes need from a stack's outputs, on the lab as natively (issue 19, items 2 and 6), under mocks.

The lab's host-side clients (Spark, DuckDB) load what the resolver finds, as natively: ``clients`` on both
targets, with the versions they run and why (DuckDB 1.4.4 against the chapter's 1.5.5). The ``docker`` output
names every service's container, so probes and procedures act through Docker. Everything a probe calls from the
host is published on 127.0.0.1 (the scheduler's and the backups' ``/jobs`` included), and the operations output
carries host-side addresses only. The lab's streaming job writes generated orders out of the box.
"""

from __future__ import annotations

import dataclasses

from lakehouse_platform.config import load_platform
from lakehouse_platform.control.workspace import pulumi_env
from lakehouse_platform.probes.support.stack import Stack
from lakehouse_platform.probes.support.versions import declared_versions
from tests.support.harness import FakeResolver, fake_artifact, run_program
from tests.support.stacks import built_lab_platform, stack_platform

CONTAINER = "docker:index/container:Container"
LAB_SERVICES = {"seaweedfs", "postgres", "rest-fixture", "catalog-gate", "trino", "maintenance-scheduler",
                "catalog-backup", "lakehouse-exporter", "prometheus", "flink-jobmanager", "kafka", "kafka-connect"}


def pairs(args: list[str]) -> dict[str, str]:
    return dict(zip(args[::2], args[1::2], strict=True))


def test_the_labs_streaming_job_writes_generated_orders(lab_run):
    # Nothing publishes to the orders topic: `source: auto` would read it (Kafka is on) and write nothing.
    assert load_platform(stack_platform("lab")).flink.job.source == "generator"
    args = pairs(lab_run.named("flink-orders-job").inputs["program_args"])
    assert args["--source"] == "generator" and "--kafka-bootstrap" not in args and args["--rows-per-second"] == "20"


def test_source_auto_in_the_lab_would_read_the_orders_topic_and_wait_for_the_broker():
    platform = stack_platform("lab")
    platform["flink"] = {"job": {"source": "auto"}}
    job = run_program("lab", platform).named("flink-orders-job")
    args = pairs(job.inputs["program_args"])
    assert args["--source"] == "kafka" and args["--kafka-bootstrap"] == "kafka:9092"
    assert "kafka" in job.depends_on


def test_host_clients_are_an_output_on_the_lab_as_natively(lab_run, native_run):
    jars = [str(p) for p in fake_artifact("spark-jars").classpath]
    for run in (lab_run, native_run):
        clients = run.outputs["clients"]
        assert clients["spark_jars"] == jars
        loads = [s for s in clients["duckdb_extensions"] if s.startswith("LOAD ")]
        assert [s.rsplit("/", 1)[-1] for s in loads] == ["httpfs.duckdb_extension'", "avro.duckdb_extension'",
                                                         "iceberg.duckdb_extension'"]
        assert clients["duckdb_extensions"][0] == "SET autoinstall_known_extensions = false"  # never a download
        duck = clients["obtained_versions"]["duckdb"]
        assert duck["version"] == "1.4.4" and "1.5.5" in duck["reason"]  # the deviation, declared with its reason
        assert clients["obtained_versions"]["iceberg-spark-runtime"]["version"] == "test"
    # The native outputs the probes and docs read are kept as they were.
    native = native_run.outputs["native"]
    assert native["spark_jars"] == jars and native["duckdb_extensions"] == native_run.outputs["clients"]["duckdb_extensions"]
    assert native["obtained_versions"]["duckdb"] == "1.4.4"


def test_the_cloud_has_no_host_clients_output(cloud_run):
    assert "clients" not in cloud_run.outputs  # its engines run in the cloud, not on this host


def test_the_docker_output_names_every_service_container(lab_run):
    docker = lab_run.outputs["docker"]
    spec = load_platform(stack_platform("lab"))
    network = lab_run.of_type("docker:index/network:Network")[0]
    assert docker["network"] == network.inputs["name"] == "book2-lab"
    assert docker["state_dir"].endswith("/lab")
    containers = {c.name: c for c in lab_run.of_type(CONTAINER)}
    assert set(docker["containers"]) >= LAB_SERVICES
    for service, entry in docker["containers"].items():
        rendered = containers[service]
        assert entry["name"] == rendered.inputs["name"] == f"book2-{service}"
        assert entry["id"] == f"{service}-id"  # the provider's id of that container
        assert entry["kind"] == spec.services[service].kind
        assert entry["restart"] == rendered.inputs["restart"]
        assert entry["memory_budget_bytes"] == spec.services[service].memory_bytes == rendered.inputs["memory"] * 2**20
    # The jobs the target adds (a bind mount's owner) are no service of the stack.
    assert not any(name.endswith("-bind-owner") for name in docker["containers"])
    assert docker["containers"]["rest-fixture"]["restart"] == "unless-stopped"  # the lab's supervision of a crash


def test_the_scheduler_and_the_backups_publish_their_port_on_loopback(lab_run):
    for service, port in (("maintenance-scheduler", 8790), ("catalog-backup", 8791)):
        assert lab_run.named(service).inputs["ports"] == [{"ip": "127.0.0.1", "internal": port, "external": port}]
        assert lab_run.outputs["endpoints"][service]["http"] == {"internal": f"{service}:{port}",
                                                                "external": f"localhost:{port}"}


def test_every_external_address_is_a_port_its_container_publishes(lab_run):
    containers = {c.name: c for c in lab_run.of_type(CONTAINER)}
    for service, ports in lab_run.outputs["endpoints"].items():
        published = {p["external"] for p in containers[service].inputs.get("ports") or []}
        for port, entry in ports.items():
            if "external" in entry:
                host, number = entry["external"].rsplit(":", 1)
                assert host == "localhost" and int(number) in published, (service, port)


def test_the_labs_operations_output_holds_host_side_addresses_only(lab_run):
    operations = lab_run.outputs["operations"]
    internal_names = set(lab_run.outputs["endpoints"])
    addresses = [operations["catalog"]["properties"]["uri"], operations["catalog"]["properties"]["s3.endpoint"],
                 operations["engine"]["host"], operations["backups"]["postgres"]["host"]]
    assert not [a for a in addresses if any(f"{name}:" in a or a == name for name in internal_names)]
    assert operations["catalog"]["properties"]["uri"] == "http://localhost:8182"  # the gate's published port
    assert operations["runs_db"].endswith("/lab/operations/runs.db")  # the bind-mounted state, as the host sees it
    assert operations["backups"]["postgres"]["bindir"] is None  # upstream's PostgreSQL 18: no client of its major here


class CacheShapedResolver(FakeResolver):
    """FakeResolver with the fixture's artifact shaped as in the cache (its PostgreSQL driver beside it), which the
    built fixture image needs; the server's artifact obtained as another version than its pin, with why."""

    def resolve(self, spec):
        found = super().resolve(spec)
        fixture = found.services["rest-fixture"]
        found.services["rest-fixture"] = dataclasses.replace(fixture, classpath=(
            fixture.path / "launcher.jar", fixture.path / "iceberg-open-api-1.10.1.jar",
            fixture.path / "postgresql-42.7.8.jar"))
        found.services["postgres"] = dataclasses.replace(found.services["postgres"], version="15.18",
                                                         notes=("apt: postgresql-15, the newest major Debian has",))
        return found


def test_built_images_hand_the_host_the_servers_own_postgres_tools_and_say_what_they_run():
    run = run_program("lab", built_lab_platform(), resolver=CacheShapedResolver())
    assert run.outputs["operations"]["backups"]["postgres"]["bindir"] == str(fake_artifact("postgres").path)
    # The manifest probe takes what a built image runs as the lab's declared version (18.6 pinned): the server is
    # Debian's postgresql-15 package at exactly this host's point release (the image pins it; issue 24).
    postgres = run.outputs["lab_images"]["postgres"]
    assert (postgres["kind"], postgres["version"], postgres["pin"]) == ("built", "15.18", "18.6")
    assert postgres["notes"] == "apt: postgresql-15, the newest major Debian has"
    seaweedfs = run.outputs["lab_images"]["seaweedfs"]  # built from the artifact's own file: its version exactly
    assert (seaweedfs["version"], seaweedfs["notes"]) == ("test", "")
    declared = declared_versions(Stack(outputs=run.outputs))
    assert declared["postgres"] == ("15.18", postgres["notes"])
    assert declared["seaweedfs"][0] == "test" and "lab.images: built" in declared["seaweedfs"][1]


def test_the_projects_pulumi_environment_skips_the_providers_a_stack_never_uses():
    assert pulumi_env("lab")["PULUMI_PYTHON_SKIP_PLUGINS"] == "aws"  # the lab needs the docker provider only
    assert pulumi_env("native")["PULUMI_PYTHON_SKIP_PLUGINS"] == "aws,docker"
