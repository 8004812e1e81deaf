"""The lab stack's program under Pulumi mocks: the real resource graph of the docker target."""

from __future__ import annotations

import os

from lakehouse_platform.config import load_platform
from lakehouse_platform.model import LAYER_NAMES
from tests.support import REPO_ROOT
from tests.support.harness import run_program
from tests.support.rendered import is_secret, reveal
from tests.support.stacks import stack_platform

BIND_OWNER = "-bind-owner"  # the jobs the docker target adds (lakehouse_platform/targets/docker.py: _bind_owner)
CONTAINER = "docker:index/container:Container"
LABELLED = {CONTAINER, "docker:index/network:Network", "docker:index/volume:Volume"}


def _labels(resource) -> dict[str, str]:
    return {item["label"]: item["value"] for item in resource.inputs.get("labels", [])}


def test_all_seven_layers_are_components_with_tokens(lab_run):
    layers = [r for r in lab_run.resources if r.type.startswith("platform:layers:")]
    assert sorted(r.type.rsplit(":", 1)[1].lower() for r in layers) == sorted(LAYER_NAMES)
    assert all(r.name == f"book2-{r.type.rsplit(':', 1)[1].lower()}" for r in layers)


def test_every_resource_has_a_layer_parent(lab_run):
    layer_names = {f"book2-{layer}" for layer in LAYER_NAMES}
    orphans = [r.name for r in lab_run.resources if not r.type.startswith("platform:") and r.parent not in layer_names]
    assert orphans == []


def test_every_labelled_resource_carries_layer_and_owner(lab_run):
    spec = load_platform(stack_platform("lab"))
    checked = 0
    for resource in lab_run.resources:
        if resource.type not in LABELLED:
            continue
        labels = _labels(resource)
        layer = labels.get("lakehouse.layer")
        assert layer in LAYER_NAMES, f"{resource.name} has no layer label"
        assert f"book2-{layer}" == resource.parent, f"{resource.name}: label {layer} but parent {resource.parent}"
        service = labels.get("lakehouse.service")
        expected_owner = spec.owner_of(service) if service else spec.layers[layer].owner
        assert labels.get("lakehouse.owner") == expected_owner
        checked += 1
    assert checked == len([r for r in lab_run.resources if r.type in LABELLED]) >= 19


def test_the_whole_chapter_lab_is_declared(lab_run):
    names = {r.name for r in lab_run.of_type(CONTAINER)}
    assert {"seaweedfs", "rest-fixture", "postgres", "polaris", "trino", "flink-jobmanager", "flink-taskmanager",
            "kafka", "kafka-connect"} <= names
    assert not {n for n in names if n.startswith("lakekeeper")}  # refused until it enforces grants (ADR 0013)
    network = lab_run.of_type("docker:index/network:Network")
    assert len(network) == 1


def test_fixture_runs_on_file_backed_sqlite_on_a_bind_mount(lab_run):
    fixture = lab_run.named("rest-fixture")
    env = dict(e.split("=", 1) for e in fixture.inputs["envs"]["value"])
    uri = env["CATALOG_URI"]
    assert uri.startswith("jdbc:sqlite:file:/catalog/") and "mode=memory" not in uri
    # A bind in the Binds API (volumes with a host path): the daemon creates a missing source.
    assert "mounts" not in fixture.inputs
    (bind,) = fixture.inputs["volumes"]
    assert bind["containerPath"] == "/catalog" and bind["hostPath"].endswith("/lab/rest-fixture/catalog")
    assert fixture.inputs["user"] == "1000:1000"  # the image's non-root user, not root
    init = lab_run.named("rest-fixture-init")
    assert init.inputs["volumes"] == [bind]
    assert "chown -R 1000:1000 /catalog" in init.inputs["command"][-1]


def test_no_unpinned_images(lab_run):
    images = [r.inputs["name"] for r in lab_run.of_type("docker:index/remoteImage:RemoteImage")]
    assert len(images) >= 12
    for image in images:
        tag = image.rsplit("/", 1)[-1]
        assert ":" in tag and not tag.endswith(":latest"), image


def test_every_server_container_has_health_check_and_memory_limit(lab_run):
    spec = load_platform(stack_platform("lab"))
    for container in lab_run.of_type(CONTAINER):
        if container.name.endswith(BIND_OWNER):  # the target's own job: a bind mount handed to a service's user
            assert container.inputs["memory"] == container.inputs["memorySwap"] > 0 and container.inputs["attach"]
            continue
        service = spec.services[container.name]
        assert container.inputs["memory"] == service.memory_bytes // (1024 * 1024)
        if service.kind == "server":
            assert container.inputs["healthcheck"]["tests"], container.name
            assert container.inputs["restart"] == "unless-stopped"
        else:
            assert container.inputs["mustRun"] is False and container.inputs["attach"] is True


def test_trino_catalog_files_point_at_internal_addresses(lab_run):
    trino = lab_run.named("trino")
    uploads = {u["file"]: u["content"] for u in reveal(trino.inputs["uploads"])}
    fixture = uploads["/etc/trino/catalog/fixture.properties"]
    # Through the catalog gate, as the writer identity; the read-only twin as the reader.
    assert "iceberg.rest-catalog.uri=http://catalog-gate:8182\n" in fixture
    assert "s3.endpoint=http://seaweedfs:8333\n" in fixture
    assert "s3.aws-secret-key=${ENV:S3_SECRET_KEY_WRITER}" in fixture  # the file holds no secret
    assert "iceberg.rest-catalog.oauth2.token=${ENV:CATALOG_TOKEN_WRITER}" in fixture
    read_only = uploads["/etc/trino/catalog/fixture_ro.properties"]
    assert "s3.aws-secret-key=${ENV:S3_SECRET_KEY_READER}" in read_only
    assert "iceberg.rest-catalog.oauth2.token=${ENV:CATALOG_TOKEN_READER}" in read_only
    assert "uri=http://polaris:8181/api/catalog" in uploads["/etc/trino/catalog/polaris.properties"]
    assert "/etc/trino/catalog/lakekeeper.properties" not in uploads  # refused (ADR 0013)
    assert is_secret(trino.inputs["envs"])


def test_host_profiles_use_external_addresses(lab_run):
    host = lab_run.outputs["profiles"]["host"]
    assert host["pyiceberg"]["uri"] == "http://localhost:8182"  # the catalog gate in front of the fixture
    assert host["pyiceberg"]["s3.endpoint"] == "http://localhost:8333"
    assert host["pyiceberg"]["token"] == "{catalog_token}"  # filled from credentials.identities.<identity>
    assert host["spark"]["spark.sql.catalog.lab.uri"] == "http://localhost:8182"
    assert "ENDPOINT 'localhost:8333'" in host["duckdb"][0]
    assert host["trino"]["host"] == "localhost" and host["trino"]["port"] == 8443
    assert host["trino"]["http_scheme"] == "https" and host["identity"] == "writer"
    services = lab_run.outputs["profiles"]["services"]
    assert "'uri' = 'http://catalog-gate:8182'" in services["flink_sql"]


def test_credentials_are_secret_everywhere(lab_run):
    creds = lab_run.outputs["credentials"]
    assert creds["secret"] is True and creds["value"]["s3_secret_key"] == "lab-secret-key"
    flat = repr(lab_run.outputs["profiles"]) + repr(lab_run.outputs["endpoints"]) + repr(lab_run.outputs["layers"])
    assert "lab-secret-key" not in flat and "lab-postgres-password" not in flat
    for container in lab_run.of_type(CONTAINER):
        for key in ("envs", "command"):
            value = container.inputs.get(key)
            if value and not is_secret(value):
                assert "lab-secret-key" not in repr(value), f"{container.name}.{key} holds a plain secret"
        uploads = container.inputs.get("uploads") or []
        if not is_secret(uploads):  # a list holding any secret content is secret as a whole
            assert "lab-secret-key" not in repr(uploads), container.name
    assert is_secret(lab_run.named("seaweedfs").inputs["uploads"])  # its s3.json holds the keys


def test_published_ports_bind_loopback_only(lab_run):
    for container in lab_run.of_type(CONTAINER):
        for port in container.inputs.get("ports") or []:
            assert port["ip"] == "127.0.0.1"


def test_small_lab_is_one_edit_away():
    platform = stack_platform("lab")
    for name in ("polaris", "lakekeeper", "flink-jobmanager", "flink-taskmanager", "kafka", "kafka-connect"):
        platform["services"][name] = {"enabled": False}
    run = run_program("lab", platform)
    names = {r.name for r in run.of_type(CONTAINER)}
    assert names == {"seaweedfs", "seaweedfs-bucket", "postgres", "rest-fixture-init", "rest-fixture", "catalog-gate",
                     "trino", "lakehouse-exporter", "prometheus", "maintenance-scheduler", "catalog-backup",
                     *(f"{n}{BIND_OWNER}" for n in ("lakehouse-exporter", "maintenance-scheduler", "catalog-backup"))}
    trino = run.named("trino")
    files = {u["file"] for u in reveal(trino.inputs["uploads"])}
    assert "/etc/trino/catalog/polaris.properties" not in files


def test_stack_overrides_owner_and_it_reaches_labels():
    platform = stack_platform("lab")
    platform["layers"]["storage"] = {"owner": "storage-sre"}
    run = run_program("lab", platform)
    seaweed = run.named("seaweedfs")
    assert _labels(seaweed)["lakehouse.owner"] == "storage-sre"
    assert run.outputs["ownership"][0]["owner"] == "storage-sre"


def test_version_manifest_output_lists_pins(lab_run):
    manifest = lab_run.outputs["version_manifest"]
    assert manifest["trino"] == "483" and manifest["rest-fixture"] == "1.10.1" and manifest["iceberg"] == "1.11.0"
    assert manifest["seaweedfs"] == "4.45" and manifest["duckdb"] == "1.5.5"


def _env(container) -> dict[str, str]:
    envs = container.inputs["envs"]
    return dict(e.split("=", 1) for e in (envs["value"] if is_secret(envs) else envs))


def _entrypoint_properties(flink_properties: str) -> dict[str, str]:
    """FLINK_PROPERTIES as the flink image's entrypoint reads it: every whitespace character of a line
    deleted (tr -d '[:space:]'), then split at the first colon (IFS=':' read -r key value)."""
    parsed = {}
    for line in flink_properties.splitlines():
        line = "".join(line.split())
        if line:
            key, _, value = line.partition(":")
            parsed[key] = value
    return parsed


def test_flink_lib_has_what_an_iceberg_job_on_s3_needs_from_the_artifact_cache(lab_run):
    """Audit item 9: Iceberg's Flink runtime, its AWS bundle and the Hadoop client in /opt/flink/lib of both
    managers (Hadoop is loaded parent-first: on the cluster classpath or NoClassDefFoundError)."""
    from lakehouse_platform.services.context import ServiceContext
    from lakehouse_platform.services.resolver import recipe_of
    from tests.support.harness import fake_artifact

    spec = load_platform(stack_platform("lab"))
    needed = {"iceberg-flink-runtime-2.1-1.11.0.jar", "iceberg-aws-bundle-1.11.0.jar", "hadoop-client-api-3.4.1.jar",
              "hadoop-client-runtime-3.4.1.jar"}
    kafka = {"flink-connector-kafka-5.0.0-2.1.jar", "kafka-clients-4.2.0.jar"}  # either source runs on the cluster
    for name in ("flink-jobmanager", "flink-taskmanager"):
        uploads = {u["file"]: u["source"] for u in lab_run.named(name).inputs["uploads"]}
        assert uploads == {f"/opt/flink/lib/{jar}": str(fake_artifact(name).path / "ext" / jar)
                           for jar in needed | kafka}
        recipe = recipe_of(spec, name)
        assert recipe is not None and recipe.key(ServiceContext(spec, name)).startswith("flink:2.1.3:")


def test_flink_without_kafka_runs_the_generator():
    platform = stack_platform("lab")
    platform["services"].update({"kafka": {"enabled": False}, "kafka-connect": {"enabled": False}})
    run = run_program("lab", platform)
    args = run.named("flink-orders-job").inputs["program_args"]
    assert "--rows-per-second" in args and args[args.index("--source") + 1] == "generator"
    assert "kafka" not in {d for d in run.named("flink-orders-job").depends_on}


def test_flink_task_manager_ports_are_pinned_and_its_health_check_probes_one(lab_run):
    """Audit item 3: taskmanager.rpc.port and taskmanager.data.port default to 0 (random) and the image fixes
    neither, so a health check on 6122 never passed. Both are set, as the entrypoint parses FLINK_PROPERTIES."""
    tm = lab_run.named("flink-taskmanager")
    props = _entrypoint_properties(_env(tm)["FLINK_PROPERTIES"])
    assert props["taskmanager.rpc.port"] == "6122" and props["taskmanager.data.port"] == "6121"
    assert props["metrics.internal.query-service.port"] == "6126"
    assert props["taskmanager.host"] == "flink-taskmanager" and props["jobmanager.rpc.address"] == "flink-jobmanager"
    assert props["taskmanager.memory.process.size"] == "1024m" and props["taskmanager.memory.managed.fraction"] == "0.1"
    assert tm.inputs["healthcheck"]["tests"] == ["CMD-SHELL", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/6122'"]
    assert tm.inputs["command"] == ["taskmanager"]
    jm_props = _entrypoint_properties(_env(lab_run.named("flink-jobmanager"))["FLINK_PROPERTIES"])
    assert {jm_props[k] for k in ("jobmanager.rpc.port", "blob.server.port", "metrics.internal.query-service.port",
                                  "rest.port")} == {"6123", "6124", "6125", "8081"}


def test_flink_checkpoints_on_a_bind_mount_owned_by_the_image_user(lab_run):
    init = lab_run.named("flink-state-init")
    mounts = {v["containerPath"]: v["hostPath"] for v in init.inputs["volumes"]}
    assert init.inputs["user"] == "0:0" and "chown -R 9999:9999 /flink-state" in init.inputs["command"][-1]
    for name in ("flink-jobmanager", "flink-taskmanager"):
        container = lab_run.named(name)
        assert {v["containerPath"]: v["hostPath"] for v in container.inputs["volumes"]} == mounts
        props = _entrypoint_properties(_env(container)["FLINK_PROPERTIES"])
        assert props["execution.checkpointing.dir"] == "file:///flink-state/checkpoints"
        assert props["execution.checkpointing.storage"] == "filesystem"
        env = _env(container)
        assert env["AWS_ACCESS_KEY_ID"] == "lab-access-key" and env["AWS_SECRET_ACCESS_KEY"] == "lab-secret-key"
        assert is_secret(container.inputs["envs"])


def test_the_flink_jobs_savepoints_land_where_both_managers_mount_and_flinks_user_owns(lab_run, tmp_path):
    """The stop-with-savepoint of a lab down: the job's savepoint directory is under the mount both managers share,
    the step hands the lineage directory it makes on the host to the image's user (uid 9999, its Dockerfile's), and
    record_graph really does (issue 35: 'Failed to create savepoint directory' when the host made it as root)."""
    from lakehouse_platform.services.flink.container import FLINK_UID, LAB_STATE
    from lakehouse_platform.services.flink.job.inputs import JobInputs
    from lakehouse_platform.services.flink.job.lineage import record_graph

    job = lab_run.named("flink-orders-job")
    mounts = {v["containerPath"]: v["hostPath"] for v in lab_run.named("flink-jobmanager").inputs["volumes"]}
    assert job.inputs["savepoint_dir"].startswith(f"file://{LAB_STATE}/savepoints/")
    assert job.inputs["host_paths"] == {f"file://{LAB_STATE}": mounts[LAB_STATE]}
    assert job.inputs["state_owner"] == FLINK_UID
    dockerfile = (REPO_ROOT / "lakehouse_platform" / "services" / "flink" / "lab" / "Dockerfile").read_text()
    uid, gid = FLINK_UID.split(":")
    assert f"--gid={gid} flink" in dockerfile and f"--uid={uid}" in dockerfile and "USER flink" in dockerfile
    inputs = JobInputs.model_validate({**job.inputs, "host_paths": {f"file://{LAB_STATE}": str(tmp_path)}})
    record_graph(inputs)
    lineage = tmp_path / "savepoints" / job.inputs["savepoint_dir"].rsplit("/", 1)[-1]
    if os.geteuid() == 0:  # CI runs as root, as the lab's host does: handed over
        assert (lineage.stat().st_uid, lineage.stat().st_gid) == (int(uid), int(gid))
        assert (lineage.parent.stat().st_uid, lineage.parent.stat().st_gid) == (int(uid), int(gid))
    else:
        assert lineage.stat().st_mode & 0o777 == 0o777


def test_flink_job_is_submitted_through_the_published_rest_port_with_internal_addresses(lab_run):
    job = lab_run.named("flink-orders-job")
    assert job.type == "pulumi-python:dynamic/flink:FlinkJob"
    assert job.inputs["rest_url"] == "http://localhost:8081"  # the host reaches the published port
    args = job.inputs["program_args"]
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    assert pairs["--catalog-uri"] == "http://catalog-gate:8182" and pairs["--s3-endpoint"] == "http://seaweedfs:8333"
    # The stack's source is the generator (nothing publishes to the orders topic): no broker address.
    assert "--kafka-bootstrap" not in pairs and pairs["--source"] == "generator"
    assert pairs["--checkpoint-interval"] == "10s" and pairs["--table"] == "streams.orders"
    assert pairs["--checkpoint-dir"].startswith("file:///flink-state/checkpoints/lakehouse-orders-stream-")
    assert job.inputs["host_paths"] == {"file:///flink-state": job.inputs["host_paths"]["file:///flink-state"]}
    assert job.inputs["host_paths"]["file:///flink-state"].endswith("/lab/flink/state")
    assert "lab-secret-key" not in repr(job.inputs)
    jobs = lab_run.outputs["jobs"]["flink-orders-job"]
    assert jobs["job_name"] == "lakehouse-orders-stream"
    assert lab_run.outputs["profiles"]["host"]["flink"]["rest"] == "http://localhost:8081"
    assert lab_run.outputs["profiles"]["services"]["flink"]["rest"] == "http://flink-jobmanager:8081"


def test_layers_export_their_contract_and_commitments(lab_run):
    layers = lab_run.outputs["layers"]
    assert set(layers) == set(LAYER_NAMES)
    assert layers["orchestration"]["maintenance"][0] == {
        "action": "expire_snapshots", "schedule": "*/15 * * * *", "older_than_days": None, "scope": "all"}
    assert layers["recovery"]["recovery"]["backup_retention_days"] == 7
    assert layers["catalog"]["down_means"].startswith("no engine can find or commit to any table")
