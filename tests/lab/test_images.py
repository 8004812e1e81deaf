"""The lab's images under mocks: the one operations image, and lab.images: built (issues 17 and 19).

What each renderer relies on and each service package's lab/Dockerfile provides (paths, users, entrypoints) is pinned
here; that every built image starts with what the renderer hands it is proven on a real engine by
tests/lab/test_runner.py (marker ``lab``).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.control.isolated import FIXTURES
from lakehouse_platform.providers import plain
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.flink import container as flink_container
from lakehouse_platform.services.kafka import container as kafka_container
from lakehouse_platform.services.kafka_connect import container as kafka_connect_container
from lakehouse_platform.services.postgres import definition as postgres
from lakehouse_platform.services.prometheus import container as prometheus_container
from lakehouse_platform.services.rest_fixture import config as rest_fixture_config
from lakehouse_platform.services.rest_fixture import container as rest_fixture_container
from lakehouse_platform.services.trino import aws as trino_aws
from lakehouse_platform.services.trino import config as trino_config
from lakehouse_platform.services.trino import definition as trino
from lakehouse_platform.targets import lab_images as images
from lakehouse_platform.version import PLATFORM_VERSION
from tests.support.harness import FakeResolver, ProgramRun, run_program
from tests.support.stacks import built_lab_platform, stack_platform

CONTAINER = "docker:index/container:Container"
REMOTE_IMAGE = "docker:index/remoteImage:RemoteImage"
BUILT_IMAGE = "docker:index/image:Image"
OPERATIONS = ("catalog-gate", "lakehouse-exporter", "maintenance-scheduler", "catalog-backup")
#: Commands a container must never run at start: the image carries what it needs (issue 19, item 1).
INSTALLS = re.compile(r"pip install|apt-get|apk add|python3? -m venv")


class BuiltResolver(FakeResolver):
    """FakeResolver with what the images are built from shaped as in the cache (the fixture's driver beside it)."""

    def resolve(self, spec):
        found = super().resolve(spec)
        fixture = found.services.get("rest-fixture")
        if fixture is not None:
            jar = fixture.path / "iceberg-open-api-1.10.1.jar"
            found.services["rest-fixture"] = dataclasses.replace(
                fixture, path=jar, classpath=(fixture.path / "launcher.jar", jar, fixture.path / "postgresql-42.7.8.jar"))
        if "postgres" in found.services:
            found.services["postgres"] = dataclasses.replace(found.services["postgres"], version="15.18")
        if "trino" in found.services:
            found.services["trino"] = dataclasses.replace(found.services["trino"], version="476")
        return found


built_platform = built_lab_platform


@pytest.fixture(scope="module")
def built_run() -> ProgramRun:
    return run_program("lab", built_platform(), resolver=BuiltResolver())


def containers(run: ProgramRun) -> dict:
    return {c.name: c for c in run.of_type(CONTAINER)}


def started_commands(container) -> str:
    return " ".join([*(container.inputs.get("entrypoints") or []), *(container.inputs.get("command") or [])])


# -- the one operations image (issue 17 item 3, issue 19 items 1 and 5) ---------------------------------------


@pytest.mark.parametrize("mode", ["upstream", "built"])
def test_the_four_operations_services_run_one_image_built_once_as_one_user(mode, lab_run, built_run) -> None:
    run = lab_run if mode == "upstream" else built_run
    (image,) = run.of_type(BUILT_IMAGE)
    assert image.inputs["imageName"] == support.OPERATIONS_IMAGE
    assert image.inputs["build"]["dockerfile"].endswith(support.OPERATIONS_DOCKERFILE)
    assert image.inputs["build"]["context"] == str(support.OPERATIONS_CONTEXT)
    assert image.inputs["build"]["builderVersion"] == "BuilderV1"  # the classic builder, as the build driver's
    args = image.inputs["build"]["args"]
    assert args["BASE"] == "debian:bookworm-20260202-slim"
    # pg_dump of the server's major: the upstream image's 18, the built server's Debian 15.
    assert args["PG_MAJOR"] == ("18" if mode == "upstream" else "15")
    found = containers(run)
    for name in OPERATIONS:
        assert found[name].inputs["image"] == support.OPERATIONS_IMAGE, name
        assert found[name].inputs["user"] == support.OPERATIONS_USER, name
        assert not found[name].inputs.get("mounts"), name  # no volume of installed packages


def test_no_container_installs_anything_when_it_starts(lab_run, built_run) -> None:
    for run in (lab_run, built_run):
        for container in run.of_type(CONTAINER):
            assert not INSTALLS.search(started_commands(container)), container.name


def test_the_gate_runs_its_module_from_the_image(lab_run) -> None:
    gate = containers(lab_run)["catalog-gate"]
    assert gate.inputs["command"][:3] == ["python", "-m", "lakehouse_platform.runtime.catalog_gate"]
    assert all(not u.get("source") for u in plain(gate.inputs["uploads"]))  # no code uploaded: the image has it


def test_the_state_the_operations_write_is_handed_to_their_user_before_they_start(lab_run) -> None:
    found = containers(lab_run)
    for name, written in (("lakehouse-exporter", ["/var/lib/lakehouse/operations"]),
                          ("maintenance-scheduler", ["/var/lib/lakehouse/operations", "/var/lib/lakehouse/backups"]),
                          ("catalog-backup", ["/var/lib/lakehouse/operations", "/var/lib/lakehouse/backups"])):
        owner = found[f"{name}-bind-owner"]
        assert owner.inputs["user"] == "0:0" and owner.inputs["attach"] is True
        assert owner.inputs["image"] == support.OPERATIONS_IMAGE
        script = owner.inputs["command"][0]
        assert script == f"mkdir -p {' '.join(written)} && chown {support.OPERATIONS_USER} {' '.join(written)}"
        assert sorted(v["containerPath"] for v in owner.inputs["volumes"]) == sorted(written)
        assert f"{name}-bind-owner" in found[name].depends_on
    # The fixture's own directory stays its user's: the backups only read it.
    assert "rest-fixture/catalog" not in found["catalog-backup-bind-owner"].inputs["command"][0]


def test_the_operations_images_user_is_the_one_the_program_runs_them_as() -> None:
    dockerfile = (support.OPERATIONS_CONTEXT / support.OPERATIONS_DOCKERFILE).read_text()
    uid, gid = support.OPERATIONS_USER.split(":")
    assert f"USER {support.OPERATIONS_USER}" in dockerfile
    assert f"useradd --uid {uid} --gid {gid}" in dockerfile
    assert "pip install" in dockerfile and "--require-hashes" in dockerfile and "runtime/image/operations.lock" in dockerfile
    assert "ARG BASE=" in dockerfile and "postgresql-client-$PG_MAJOR" in dockerfile


def test_the_operations_images_context_is_exactly_what_it_needs(tmp_path: Path) -> None:
    """The package's .dockerignore admits the code the image runs, its Dockerfile and its lock: never the other modules,
    data files or bytecode (the package's directory is the context, in site-packages or in this checkout)."""
    from docker.utils.build import exclude_paths

    context = support.OPERATIONS_CONTEXT
    patterns = [line for line in (context / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    expected = {".dockerignore", "runtime/image/Dockerfile", "runtime/image/operations.lock", "__init__.py",
                *(str(p.relative_to(context)) for p in (context / "runtime").rglob("*.py")),
                # each service's runtime code, in its package (whose __init__ imports nothing)
                *(str(p.relative_to(context)) for pattern in ("services/__init__.py", "services/*/__init__.py",
                                                               "services/*/runtime.py") for p in context.glob(pattern))}
    assert "services/polaris/runtime.py" in expected
    sent = exclude_paths(str(context), patterns)
    assert {p for p in sent if (context / p).is_file()} == expected
    # Directories are sent only where docker must walk into them: the services and their packages, never a
    # package's own directories (its lab files, its job) or what a run leaves behind.
    services = context / "services"
    assert {p for p in sent if (context / p).is_dir()} == {
        str(p.relative_to(context)) for p in [services, *services.glob("*/")] if p.name != "__pycache__"}
    assert support.operations_context_files() == sorted(expected)
    # What sits beside it in an installed package never reaches the context (the image changes only with its code).
    for noisy in ("runtime/__pycache__/runs.cpython-311.pyc", "services/flink/flink.jars.json", "component.py",
                  "probes/test_x.py", "py.typed"):
        (tmp_path / noisy).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / noisy).write_text("x")
    (tmp_path / "runtime" / "runs.py").write_text("x")
    (tmp_path / ".dockerignore").write_text("")
    sent = exclude_paths(str(tmp_path), patterns)
    assert {p for p in sent if (tmp_path / p).is_file()} == {".dockerignore", "runtime/runs.py"}


# -- lab.images: built --------------------------------------------------------------------------------------


def test_built_mode_runs_every_service_from_its_built_image(built_run) -> None:
    refs = {r.name.removesuffix("-image"): r.inputs["name"] for r in built_run.of_type(REMOTE_IMAGE)}
    for name, container in containers(built_run).items():
        if name in images.service_images():
            key = images.service_images()[name]
            assert refs[name].startswith(f"{images.TAG_PREFIX}/{key}:"), name
            assert container.inputs["image"] == f"sha256:{name}-image", name  # the RemoteImage of the local tag
    assert refs["trino"].startswith("lakehouse-lab/trino:476-")  # what the artifact is, not the pin (483)
    assert refs["postgres"].startswith("lakehouse-lab/postgres:15.18-")
    assert refs["seaweedfs"] == refs["seaweedfs-bucket"]  # a job runs its service's image


def test_the_offline_lab_stack_runs_the_built_images_through_its_extends_as_pulumi_hands_it_over() -> None:
    """``make up STACK=lab-offline``: Pulumi hands the program the stack file's own keys (lakehouse:extends and the
    overlay), and the program reads the lab's file under them: no edit of Pulumi.lab.yaml."""
    import yaml

    from lakehouse_platform.config import EXTENDS_KEY

    config = yaml.safe_load((FIXTURES / "Pulumi.lab-offline.yaml").read_text())["config"]
    assert config[EXTENDS_KEY] == "lab"
    run = run_program("lab-offline", config["lakehouse:platform"], extra_config={EXTENDS_KEY: "lab"}, secret_keys=[],
                      resolver=BuiltResolver())
    kinds = {name: entry["kind"] for name, entry in run.outputs["lab_images"].items()}
    assert kinds["trino"] == kinds["postgres"] == "built" and not {"polaris", "lakekeeper"} & set(kinds)
    assert (run.outputs["platform"], run.outputs["stack"], run.outputs["disposable"]) == ("book2", "lab-offline", True)


def test_the_built_postgresql_runs_exactly_the_point_release_its_tag_says(built_run) -> None:
    """Tagged 15.18 and running whatever the mirror had at build time (15.20) was the bug: the image installs the
    host's point release (PG_VERSION), its build checks what it installed, and the tag and lab_images say that."""
    spec = load_platform(built_platform())
    build = images.plan(spec, BuiltResolver().resolve(spec))["postgres"]
    assert build.args["PG_VERSION"] == "15.18" and build.args["PG_MAJOR"] == "15"
    assert build.tag.startswith("lakehouse-lab/postgres:15.18-")
    dockerfile = build.image.dockerfile.read_text()
    assert '"postgresql-$PG_MAJOR=$PG_VERSION-*"' in dockerfile  # apt's version pin, any Debian revision of it
    assert 'case "$runs" in *") $PG_VERSION "*' in dockerfile  # the build fails on any other release
    assert built_run.outputs["lab_images"]["postgres"]["version"] == "15.18"


def test_built_mode_says_what_each_image_is(built_run) -> None:
    found = built_run.outputs["lab_images"]
    assert found["trino"]["kind"] == "built" and (found["trino"]["version"], found["trino"]["pin"]) == ("476", "483")
    assert found["lakehouse-exporter"] == {"image": support.OPERATIONS_IMAGE, "kind": "platform", "version": PLATFORM_VERSION}
    spec = load_platform(built_platform())
    assert spec.pin_of("trino") == "476" and spec.version_manifest()["iceberg in trino"] == "1.9.1"
    assert load_platform(stack_platform("lab")).pin_of("trino") == "483"


def test_built_mode_renders_for_the_version_it_runs(built_run, lab_run) -> None:
    """Trino 476 names the S3 switch fs.native-s3.enabled (483: fs.s3.enabled): one renderer, both kinds."""
    def catalog(run) -> str:
        uploads = {u["file"]: u["content"] for u in plain(containers(run)["trino"].inputs["uploads"])}
        return uploads["/etc/trino/catalog/fixture.properties"]

    assert "fs.native-s3.enabled=true" in catalog(built_run)
    assert "fs.s3.enabled=true" in catalog(lab_run)


def test_built_images_carry_what_the_upstream_ones_get_at_start(built_run, lab_run) -> None:
    built, upstream = containers(built_run), containers(lab_run)
    assert upstream["flink-jobmanager"].inputs.get("uploads") and not built["flink-jobmanager"].inputs.get("uploads")
    assert any(v.get("readOnly") for v in upstream["kafka-connect"].inputs.get("volumes") or [])
    assert not built["kafka-connect"].inputs.get("volumes")


def test_a_built_tag_changes_with_what_the_image_is_made_of() -> None:
    spec = load_platform(built_platform())
    artifacts = BuiltResolver().resolve(spec)
    before = images.built_tags(spec, artifacts)
    artifacts.services["kafka"] = dataclasses.replace(artifacts.services["kafka"], sha256="1" * 64)
    after = images.built_tags(spec, artifacts)
    assert before["kafka"] != after["kafka"] and before["kafka-topics"] != after["kafka-topics"]
    assert before["trino"] == after["trino"]
    other_base = load_platform({**built_platform(), "lab": {"images": "built", "base_image": "example/deb:12"}})
    assert images.built_tags(other_base, BuiltResolver().resolve(other_base))["trino"] != before["trino"]


def test_polaris_is_refused_in_built_mode_unless_its_images_are_local() -> None:
    spec = load_platform(built_platform(polaris={"enabled": True}))  # Lakekeeper: refused anyway (ADR 0013)
    problems = images.refusals(spec, present=lambda image: False)
    assert any(p.startswith("services.polaris.enabled: lab.images: built builds no image for polaris (")
               and "apache/polaris:1.7.0 is not in the engine" in p for p in problems)
    assert images.refusals(spec, present=lambda image: True) == []
    assert images.refusals(load_platform(stack_platform("lab")), present=lambda image: False) == []  # upstream


def test_lab_settings_are_checked_with_the_key_named() -> None:
    with pytest.raises(ConfigError, match=r"lab\.images: 'built' makes the lab's container images; the native"):
        load_platform({**stack_platform("native"), "lab": {"images": "built"}}, source="Pulumi.native.yaml")
    with pytest.raises(ConfigError, match=r"lab\.base_image: .*'debian' is not an image name with a tag"):
        load_platform({**stack_platform("lab"), "lab": {"base_image": "debian"}}, source="Pulumi.lab.yaml")


# -- what each renderer relies on, each Dockerfile provides -----------------------------------------------------


def dockerfile(key: str) -> str:
    return images.images()[key].dockerfile.read_text()


def script(name: str) -> str:
    """A helper script of a lab image, by file name (each package's lab/ directory)."""
    (found,) = [p for image in images.images().values() for p in image.scripts if p.name == name]
    return found.read_text()


def test_every_lab_image_takes_its_base_and_the_hosts_certificates() -> None:
    for key, image in images.images().items():
        text = dockerfile(key)
        assert text.count("ARG BASE=") == 1 and "FROM ${BASE}" in text, key
        assert "ARG CA_CERTIFICATES=" in text and "update-ca-certificates" in text, key
        for name in (path.name for path in image.scripts):
            assert f"COPY {name} " in text or f" {name} " in text, (key, name)


def test_the_images_provide_the_paths_and_users_the_renderers_rely_on() -> None:
    uid = flink_container.FLINK_UID.split(":")[0]
    assert f"--uid={uid}" in dockerfile("flink") and "COPY lib/ /opt/flink/lib/" in dockerfile("flink")
    assert flink_container.IMAGE_LIB == "/opt/flink/lib"
    fixture_uid = rest_fixture_config.FIXTURE_UID.split(":")[0]
    assert f"--uid {fixture_uid}" in dockerfile("rest-fixture")
    assert f"WORKDIR {rest_fixture_container.IMAGE_DIR}" in dockerfile("rest-fixture")
    assert f"{rest_fixture_container.IMAGE_JAR} {rest_fixture_container.BUILT_IMAGE_DRIVER}" in dockerfile("rest-fixture")
    assert "CATALOG_CATALOG__IMPL=org.apache.iceberg.jdbc.JdbcCatalog" in dockerfile("rest-fixture")
    assert f"COPY trino-run.sh {trino_aws.IMAGE_LAUNCHER}" in dockerfile("trino")
    assert trino.DEFAULT["health"]["command"] == ["CMD", "/usr/lib/trino/bin/health-check"]
    assert "COPY trino-health-check.sh /usr/lib/trino/bin/health-check" in dockerfile("trino")
    assert f"mkdir -p {trino_config.IMAGE_ETC}/catalog" in dockerfile("trino")
    assert f"COPY libs/ {kafka_container.IMAGE_HOME}/libs/" in dockerfile("kafka")
    assert f"mkdir -p {kafka_container.DATA_DIR_IN_IMAGE}" in dockerfile("kafka")
    assert "/opt/kafka/bin/kafka-topics.sh" in dockerfile("kafka")
    assert f"COPY plugins/ {kafka_connect_container.PLUGIN_DIR_IN_IMAGE}/" in dockerfile("kafka-connect")
    assert "/docker-entrypoint-initdb.d" in dockerfile("postgres") and "POSTGRES_PASSWORD" in script(
        "postgres-entrypoint.sh")
    assert postgres.container.__doc__ and "VOLUME /var/lib/postgresql" in dockerfile("postgres")
    assert 'ENTRYPOINT ["/usr/bin/prometheus"]' in dockerfile("prometheus")
    assert f"mkdir -p {prometheus_container.IMAGE_ETC} /prometheus" in dockerfile("prometheus")
    assert 'ENTRYPOINT ["/usr/bin/weed"]' in dockerfile("seaweedfs") and " wget" in dockerfile("seaweedfs")


def test_the_images_read_the_variables_the_renderers_set() -> None:
    """Kafka's KAFKA_* mapping and Debezium's variables, read back by the images' launchers as the renderers
    write them (the same key round-trips through image_env_name and the launcher's mapping)."""
    import subprocess

    keys = ["transaction.state.log.min.isr", "share.coordinator.state.topic.replication.factor", "log.dirs",
            "controller.quorum.voters"]
    env = {kafka_container.image_env_name(k): "v" for k in keys}
    mapping = script("kafka-run.sh").split("while IFS=")[1].split("done <")[0]
    program = "while IFS=" + mapping + 'done < <(env | grep "^KAFKA_" | sort)\ncat "$config"\n'
    done = subprocess.run(["bash", "-c", f'set -euo pipefail\nconfig=$(mktemp)\nskip=" KAFKA_HEAP_OPTS "\n{program}'],
                          env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True)
    assert sorted(line.split("=")[0] for line in done.stdout.splitlines()) == sorted(keys)
    assert all(f"{name}" in script("connect-run.sh") for name in kafka_connect_container.IMAGE_VARIABLES.values())


def test_an_image_built_from_no_artifact_says_which() -> None:
    spec = load_platform(built_platform())
    artifacts = BuiltResolver().resolve(spec)
    del artifacts.services["trino"]
    with pytest.raises(images.ImageBuildError, match=r"services\.trino: no artifact resolved for the lab's trino"):
        images.plan(spec, artifacts)


def test_a_lab_whose_image_cannot_be_planned_stops_the_program_with_the_reason_not_a_traceback() -> None:
    import pulumi

    class NoTrino(BuiltResolver):
        def resolve(self, spec):
            found = super().resolve(spec)
            del found.services["trino"]
            return found

    with pytest.raises(pulumi.RunError, match=r"the lab cannot be built here:\n  - services\.trino: no artifact"):
        run_program("lab", built_platform(), resolver=NoTrino())


def test_the_fixture_context_is_its_jar_and_driver() -> None:
    spec = load_platform(built_platform())
    build = images.plan(spec, BuiltResolver().resolve(spec))["rest-fixture"]
    assert {k: v.name for k, v in build.context.files.items()} == {
        "iceberg-rest-adapter.jar": "iceberg-open-api-1.10.1.jar", "postgresql.jar": "postgresql-42.7.8.jar"}
    assert isinstance(build.artifact, Artifact)


def test_the_lab_cli_says_what_is_missing_from_the_cache_without_a_traceback(tmp_path, monkeypatch, capsys) -> None:
    from lakehouse_platform.cli import main

    monkeypatch.setenv("LAKEHOUSE_CACHE", str(tmp_path))  # an empty cache: nothing resolves
    monkeypatch.setenv("LAKEHOUSE_PROJECT", str(FIXTURES))  # what -C sets, for this test only
    assert main(["-C", str(FIXTURES), "lab", "--stack", "lab", "--set", "lab.images=built", "images", "tags"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("error: artifacts missing from the cache") and "make artifacts STACK=" in said


def test_a_base_image_from_a_registry_with_a_port_is_accepted_as_a_services_image_is() -> None:
    """The lab's base image is checked as every service's image is: a local mirror's name is a pinned image."""
    spec = load_platform({**stack_platform("lab"), "lab": {"base_image": "localhost:5000/debian:bookworm-slim"}})
    assert spec.lab.base_image == "localhost:5000/debian:bookworm-slim"
    with pytest.raises(ConfigError, match=r"lab\.base_image: .*'debian:latest' uses 'latest'"):
        load_platform({**stack_platform("lab"), "lab": {"base_image": "debian:latest"}}, source="Pulumi.lab.yaml")


def test_a_failed_image_build_says_what_its_failing_step_said() -> None:
    """The engine's error alone ("returned a non-zero code: 100") hides why; apt's own line comes with it."""
    from lakehouse_platform.control.image_builds import build_image
    from lakehouse_platform.services.built_image import ImageBuildError

    class Engine:  # the classic builder's decoded stream, as the Docker API sends it on a failed RUN
        class api:
            @staticmethod
            def build(**kwargs):
                yield {"stream": "Step 4/9 : RUN apt-get install postgresql-15=15.18-*\n"}
                yield {"stream": " ---> Running in 1f2e3d\n"}
                yield {"stream": "E: Version '15.18-*' for 'postgresql-15' was not found\n"}
                yield {"error": "The command '/bin/sh -c apt-get install' returned a non-zero code: 100"}

    said: list[str] = []
    with pytest.raises(ImageBuildError) as info:
        build_image(Engine(), Path("/nonexistent"), "Dockerfile", "lakehouse-lab/postgres:15.18-x", {}, said.append)
    assert "returned a non-zero code: 100; its last output:\n" in str(info.value)
    assert "E: Version '15.18-*' for 'postgresql-15' was not found" in str(info.value)
    assert "Step 4/9" in said[0]
