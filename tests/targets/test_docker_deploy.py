"""The lab's graph as Docker would run it, checked against what the upstream images and APIs need.

Each test pins one finding of issue #13 (read against the pinned upstream sources, see README
"Targets, and what is proven where") on the rendered resources; the docker provider is mocked,
including what it reads back from a job (exit code, logs).
"""

from __future__ import annotations

import pytest

from lakehouse_platform.config import load_platform
from lakehouse_platform.paths import state_root
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.operations_support import OPERATIONS_IMAGE
from lakehouse_platform.services.plans import ContainerHost
from lakehouse_platform.services.registry import registry
from lakehouse_platform.targets.docker import AFTER_JOB_LABEL, JobFailed, job_outcome
from tests.support.harness import ProgramRun, RecordingMocks, cached_run, fake_artifact, run_program
from tests.support.rendered import envs
from tests.support.stacks import stack_platform

CONTAINER = "docker:index/container:Container"


def labels(container) -> dict[str, str]:
    return {item["label"]: item["value"] for item in container.inputs.get("labels", [])}


# -- 1. bind-mount sources ---------------------------------------------------------------------


def test_every_bind_source_is_created_by_the_daemon_before_its_container(lab_run: ProgramRun) -> None:
    """No bind through the Mounts API (it refuses a missing source); each is a Binds entry the daemon creates."""
    spec = load_platform(stack_platform("lab"))
    state = state_root() / "lab"
    checked = 0
    for container in lab_run.of_type(CONTAINER):
        assert all(m["type"] != "bind" for m in container.inputs.get("mounts") or []), container.name
        if container.name.endswith("-bind-owner"):  # the target's own job: its service's binds, checked there
            continue
        definition = registry()[container.name]
        assert definition.docker.container is not None
        host = ContainerHost(state_dir=state, artifact=fake_artifact(container.name))
        plan = definition.docker.container(ServiceContext(spec, container.name), host)
        expected = [{"hostPath": str(state / host), "containerPath": target} for host, target in plan.bind_mounts.items()]
        checked += len(expected)
        # Artifacts from the cache (the Connect worker's sink plugin) are read-only binds of files that exist.
        expected += [{"hostPath": path, "containerPath": target, "readOnly": True}
                     for path, target in plan.host_mounts.items()]
        assert (container.inputs.get("volumes") or []) == expected, container.name
    # The fixture and its init job share /catalog, Flink's init job and managers /flink-state; the
    # operations services bind the state they read and write (backups, the fixture's catalog, locks), and
    # Prometheus its data.
    assert checked == 12


def test_evaluating_the_lab_creates_no_directory(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Side-effect free: the bind source is the daemon's to create, not the program's."""
    monkeypatch.setenv("LAKEHOUSE_STATE_DIR", str(tmp_path / "state"))
    run = run_program("lab", stack_platform("lab"))
    (bind,) = run.named("rest-fixture").inputs["volumes"]
    assert bind["hostPath"] == str(tmp_path / "state" / "lab" / "rest-fixture" / "catalog")
    assert not (tmp_path / "state").exists()


# -- 6, 7. jobs: exit codes, and what waits for them -------------------------------------------


def test_a_failed_job_fails_the_deployment_with_its_log_tail_and_starts_nothing_after_it() -> None:
    mocks = RecordingMocks(job_results={"polaris-bootstrap": (
        2, "\n".join([f"line {i}" for i in range(40)] + ["connecting with lab-postgres-password", "ERROR: realm"]))})
    with pytest.raises(JobFailed) as failed:
        run_program("lab", stack_platform("lab"), mocks=mocks)
    message = str(failed.value)
    assert message.startswith("job polaris-bootstrap exited 2; nothing that depends on it was started.")
    assert "ERROR: realm" in message and "line 39" in message and "line 9\n" not in message  # the last 30 lines
    assert "lab-postgres-password" not in message and "connecting with [secret]" in message
    assert "pulumi up --replace 'urn:pulumi:lab::lakehouse-platform::" in message
    registered = {r.name for r in mocks.resources if r.type == CONTAINER}
    assert "polaris-bootstrap" in registered
    # What waits for the job (directly or through what waits for it) was never created.
    assert not registered & {"polaris", "polaris-catalog", "trino"}


def test_a_failed_job_nothing_waits_for_still_fails_the_deployment() -> None:
    platform = stack_platform("lab")
    for name in ("polaris", "lakekeeper"):
        platform["services"][name] = {"enabled": False}
    mocks = RecordingMocks(job_results={"seaweedfs-bucket": (1, "bucket warehouse is missing after s3.bucket.create")})
    with pytest.raises(JobFailed, match=r"job seaweedfs-bucket exited 1(.|\n)*\n    bucket warehouse is missing"):
        run_program("lab", platform, mocks=mocks)


def test_a_job_without_an_exit_code_is_a_failure() -> None:
    with pytest.raises(JobFailed, match="job x did not report an exit code"):
        job_outcome("x", "urn:x", None, None, [])
    assert job_outcome("x", "urn:x", 0, "anything", ["secret-value"]) == "exit 0"


def test_every_job_is_gated_and_its_dependents_carry_the_gate(lab_run: ProgramRun) -> None:
    spec = load_platform(stack_platform("lab"))
    # Container jobs; the streaming job is a deployment step (a FlinkJob), not a container that exits.
    jobs = [n for n, s in spec.enabled_services().items() if s.kind == "job" and registry()[n].docker.container is not None]
    # The target's own jobs: the state an operations service writes, handed to its user before it starts.
    owners = {n: f"{n}-bind-owner" for n in ("lakehouse-exporter", "maintenance-scheduler", "catalog-backup")}
    assert lab_run.outputs["job_outcomes"] == {job: "exit 0" for job in [*jobs, *owners.values()]}
    for container in lab_run.of_type(CONTAINER):
        if container.name in owners.values():
            continue
        service = spec.services[container.name]
        gates = {k.removeprefix(AFTER_JOB_LABEL): v for k, v in labels(container).items()
                 if k.startswith(AFTER_JOB_LABEL)}
        waits = [dep for dep in service.depends_on if dep in jobs] + ([owners[container.name]]
                                                                      if container.name in owners else [])
        assert gates == dict.fromkeys(waits, "exit 0"), container.name
        if service.kind == "job":
            assert container.inputs["attach"] is True and container.inputs["logs"] is True
    assert "rest-fixture-init" in spec.services["rest-fixture"].depends_on  # 7: no race with the chown


def test_the_fixture_waits_for_its_init_job(lab_run: ProgramRun) -> None:
    fixture = lab_run.named("rest-fixture")
    assert "rest-fixture-init" in fixture.depends_on
    assert labels(fixture)[f"{AFTER_JOB_LABEL}rest-fixture-init"] == "exit 0"


# -- 4. the catalogs' setup steps, in order ------------------------------------------------------


def test_polaris_catalog_runs_after_polaris_is_healthy_and_before_trino(lab_run: ProgramRun) -> None:
    polaris = lab_run.named("polaris")
    job = lab_run.named("polaris-catalog")
    trino = lab_run.named("trino")
    assert polaris.inputs["wait"] is True  # pulumi-docker waits for the container's health check
    assert {"polaris", "seaweedfs-bucket"} <= set(job.depends_on)
    assert "polaris-catalog" in trino.depends_on and "lakekeeper-warehouse" not in trino.depends_on  # refused
    assert labels(trino)[f"{AFTER_JOB_LABEL}polaris-catalog"] == "exit 0"
    assert job.inputs["image"] == OPERATIONS_IMAGE  # the access job is the operations image's Python
    assert job.inputs["command"] == ["python", "-m", "lakehouse_platform.services.polaris.runtime", "--config",
                                     "/etc/lakehouse/polaris-access.json"]
    env = envs(job)
    # Root (the catalog job is its only holder besides the bootstrap) and each identity's own client secret.
    assert env["POLARIS_ROOT_SECRET"] == "lab-polaris-root-secret"
    assert {k: v for k, v in env.items() if k.startswith("POLARIS_CLIENT_SECRET_")} == {
        f"POLARIS_CLIENT_SECRET_{name.upper()}": f"lab-{name}-polaris-client-secret"
        for name in ("platform", "writer", "reader")}
    assert isinstance(job.inputs["envs"], dict), "the job's environment holds a secret: it is a secret"


def test_the_lab_runs_no_lakekeeper(lab_run: ProgramRun) -> None:
    """Refused until it enforces the stack's grants (ADR 0013): no container of it, its jobs or its sidecar."""
    assert not [r.name for r in lab_run.resources if "lakekeeper" in r.name]


def test_trino_waits_only_for_the_catalogs_the_stack_runs() -> None:
    platform = stack_platform("lab")
    for name in ("polaris", "lakekeeper"):
        platform["services"][name] = {"enabled": False}
    spec = load_platform(platform)
    assert spec.services["trino"].depends_on == []
    cloud = load_platform(stack_platform("cloud"))
    # On aws there is no bucket job: the catalog job waits for Polaris only; Lakekeeper is refused (ADR 0013).
    assert cloud.services["polaris-catalog"].depends_on == ["polaris"]
    assert set(cloud.services["trino"].depends_on) == {"polaris-catalog"}


def test_trino_catalog_files_name_the_warehouses_the_jobs_create(lab_run: ProgramRun) -> None:
    spec = load_platform(stack_platform("lab"))
    raw = lab_run.named("trino").inputs["uploads"]  # a secret as a whole (the TLS keystore is one of them)
    uploads = {u["file"]: u["content"] for u in (raw["value"] if isinstance(raw, dict) else raw)}
    for catalog in ("polaris", "polaris_ro"):
        assert f"iceberg.rest-catalog.warehouse={spec.catalog.warehouse}\n" in uploads[f"/etc/trino/catalog/{catalog}.properties"]
    assert not any("lakekeeper" in path for path in uploads)


# -- 2, 4. Polaris's server settings --------------------------------------------------------------


def test_polaris_supports_s3_only_and_reaches_the_lab_store_with_its_own_keys(lab_run: ProgramRun) -> None:
    env = envs(lab_run.named("polaris"))
    assert env['polaris.features."SUPPORTED_CATALOG_STORAGE_TYPES"'] == '["S3"]'
    assert not any("FILE" in value for value in env.values())
    assert not any("IGNORE_SEVERE" in key.upper() or "ignore-severe" in key for key in env)
    # With stsUnavailable Polaris vends no keys and uses its own (upstream's MinIO guide sets the same three).
    assert env["AWS_REGION"] == "us-east-1"
    assert env["AWS_ACCESS_KEY_ID"] == "lab-access-key" and env["AWS_SECRET_ACCESS_KEY"] == "lab-secret-key"
    assert "-Dpolaris.authentication.token-broker.type=symmetric-key" in env["JAVA_OPTS_APPEND"]
    assert env["polaris.authentication.token-broker.symmetric-key.secret"] == "lab-polaris-token-signing-key"


# -- 5. SeaweedFS -------------------------------------------------------------------------------


def test_seaweedfs_announces_its_service_name_and_the_bucket_job_bypasses_the_entrypoint(lab_run: ProgramRun) -> None:
    command = lab_run.named("seaweedfs").inputs["command"]
    assert command[:3] == ["server", "-ip=seaweedfs", "-ip.bind=0.0.0.0"]
    job = lab_run.named("seaweedfs-bucket")
    assert job.inputs["entrypoints"] == ["/bin/sh", "-c"]
    (script,) = job.inputs["command"]
    assert "weed shell -master=seaweedfs:9333 -filer=seaweedfs:8888" in script
    assert script.rstrip().endswith("exit 1")  # a bucket still missing fails the job


def test_the_store_image_is_pinned_by_digest(lab_run: ProgramRun) -> None:
    images = {r.name: r.inputs["name"] for r in lab_run.of_type("docker:index/remoteImage:RemoteImage")}
    digest = "@sha256:fc9f76fa993ad69966ffeb2f65d0318fcae39c6f8e20cf68ef7b3a5cb97769e5"
    assert images["seaweedfs-image"] == images["seaweedfs-bucket-image"] == f"chrislusf/seaweedfs:4.45{digest}"


# -- 10. small ones -------------------------------------------------------------------------------


def test_the_fixture_listens_where_its_server_reads_the_port(lab_run: ProgramRun) -> None:
    env = envs(lab_run.named("rest-fixture"))
    assert env["CATALOG_REST_PORT"] == "8181"  # RESTCatalogServer: catalog property rest.port
    assert "REST_PORT" not in env


def test_trino_names_the_s3_switch_as_its_version_does(lab_run: ProgramRun) -> None:
    from lakehouse_platform.services.trino.config import s3_switch

    assert s3_switch("483") == "fs.s3.enabled" and s3_switch("476") == "fs.native-s3.enabled"
    for body in lab_run.outputs["profiles"]["services"]["trino_catalogs"].values():  # Trino 483 on the lab
        assert "fs.s3.enabled=true\n" in body and "fs.native-s3.enabled" not in body
    native = cached_run("native", stack_platform("native"))  # Trino 476 natively
    for body in native.outputs["profiles"]["services"]["trino_catalogs"].values():
        assert "fs.native-s3.enabled=true\n" in body and "fs.s3.enabled" not in body
