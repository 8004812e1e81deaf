"""The lab's own images: each service's, built from the native target's verified artifacts, and the operations image.

With ``lab.images: built`` every lab service runs an image built here (``docker/lab/<image>.Dockerfile``, on
``lab.base_image``) from the same artifacts the native target runs: no container registry is needed. The
build context of each is staged from the artifact cache into a directory of its own (hard links, or copies
across file systems; never the repository root), with the Dockerfile's helper scripts and the files the
renderers' configuration needs. Every image is tagged ``lakehouse-lab/<image>:<version>-<digest>``: the
version is what the artifact is (Trino 476, not the pin 483), the digest covers the Dockerfile, its scripts,
the artifact's recorded sha256 and the build arguments, so the program computes the same tag from the cache
without touching the engine (``built_tags``) and the build driver skips an image whose tag exists.

Polaris and Lakekeeper have no artifact: in built mode they run their upstream images, and only when those
are present in the engine already (``refusals``; checked by the build driver, never by evaluating the program).

The builds use the engine's own build API (the classic builder: what DOCKER_BUILDKIT=0 selects), through the
Docker SDK for Python; they trust the host's extra CA certificates and pass its proxy settings.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.artifacts.artifact import Artifact
from infra.paths import PROJECT_ROOT
from infra.services.resolver import StackArtifacts
from infra.spec import PlatformSpec, Target

LAB_DOCKERFILES = PROJECT_ROOT / "docker" / "lab"
TAG_PREFIX = "lakehouse-lab"
#: The host's extra CA certificates, trusted by every build (apt, pip, the JREs through the system store).
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
#: Proxy settings passed through as build arguments (the engine does not bake them into the image).
PROXY_ARGS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
#: The JDK major Trino's image carries (the native target's, found on the host).
TRINO_JAVA = 24


class LabImageError(RuntimeError):
    """A lab image cannot be built or used; the message names the config key and what to do."""


@dataclass(frozen=True)
class Context:
    """What one image's build context holds: host files by context path, and generated files."""

    files: dict[str, Path] = field(default_factory=dict)  # context path -> host file (links followed)
    trees: dict[str, Path] = field(default_factory=dict)  # context dir -> host dir, whole
    texts: dict[str, str] = field(default_factory=dict)  # context path -> content
    args: dict[str, str] = field(default_factory=dict)  # build arguments (beyond BASE and CA_CERTIFICATES)
    digest_parts: tuple[str, ...] = ()  # what else the tag covers (a JDK's release file)


@dataclass(frozen=True)
class LabImage:
    """One service image of the lab: its Dockerfile, the artifact it is built from, its helper scripts."""

    key: str  # docker/lab/<key>.Dockerfile, and the tag's name
    artifact_of: str  # the service whose native artifact it is built from
    scripts: tuple[str, ...]  # files of docker/lab/ the context carries
    context: Callable[[Artifact, StackArtifacts], Context]
    #: Built from Debian's package of the artifact's major (apt at build time), not from its files: the image runs
    #: that major at whatever point release the mirror has then.
    package_major: bool = False

    @property
    def dockerfile(self) -> Path:
        return LAB_DOCKERFILES / f"{self.key}.Dockerfile"

    def runs(self, artifact: Artifact) -> tuple[str, list[str]]:
        """What a container of this image runs, as far as the artifact says: (version, why it is not the pin)."""
        if not self.package_major:
            return artifact.version, list(artifact.notes)
        major = _major(artifact.version)
        return major, [*artifact.notes, f"the image installs Debian's package of major {major} at build time "
                                        f"(its point release is the mirror's then; this host's is {artifact.version})"]


def _major(version: str) -> str:
    return version.split(".", 1)[0]


def _seaweedfs(artifact: Artifact, stack: StackArtifacts) -> Context:
    return Context(files={"weed": artifact.path})


def _postgres(artifact: Artifact, stack: StackArtifacts) -> Context:
    # Debian's postgresql-<major>: the package the native artifact is (apt owns its files).
    return Context(args={"PG_MAJOR": _major(artifact.version)})


def _rest_fixture(artifact: Artifact, stack: StackArtifacts) -> Context:
    driver = next((p for p in artifact.classpath if p.name.startswith("postgresql-")), None)
    if driver is None:
        raise LabImageError(f"the rest-fixture artifact ({artifact.path}) has no PostgreSQL driver on its classpath")
    return Context(files={"iceberg-rest-adapter.jar": artifact.path, "postgresql.jar": driver})


def _trino(artifact: Artifact, stack: StackArtifacts) -> Context:
    jdk = stack.java.get(TRINO_JAVA)
    if jdk is None:
        raise LabImageError(f"no JDK >= {TRINO_JAVA} resolved for Trino's image (the native target's)")
    release = jdk / "release"
    return Context(trees={"trino-server": artifact.path, "jdk": jdk},
                   digest_parts=(str(jdk), release.read_text() if release.is_file() else ""))


def _prometheus(artifact: Artifact, stack: StackArtifacts) -> Context:
    return Context()  # Debian's prometheus package, installed by the Dockerfile as natively


def _flink(artifact: Artifact, stack: StackArtifacts) -> Context:
    from infra.services.flink import config as flink_config
    from infra.services.flink import native as flink_native

    home = artifact.path
    files = {f"lib/{p.name}": p for p in artifact.classpath}  # the distribution's lib/ and the locked jars
    files["bin/bash-java-utils.jar"] = home / flink_native.UTILS_JAR
    classpath = "".join(f"/opt/flink/lib/{p.name}\n" for p in artifact.classpath)
    return Context(files=files, texts={"classpath": classpath, "log4j-console.properties": flink_config.LOG4J_CONSOLE})


def _kafka(artifact: Artifact, stack: StackArtifacts) -> Context:
    from infra.services.kafka import config as kafka_config

    return Context(trees={"libs": artifact.path}, texts={"log4j2.properties": kafka_config.LOG4J2})


def _kafka_connect(artifact: Artifact, stack: StackArtifacts) -> Context:
    from infra.services.kafka_connect import config as kafka_connect_config

    root = artifact.path
    return Context(trees={"libs": root / "libs", "plugins": root / "plugins"},
                   texts={"log4j2.properties": kafka_connect_config.LOG4J2})


IMAGES: dict[str, LabImage] = {image.key: image for image in (
    LabImage("seaweedfs", "seaweedfs", (), _seaweedfs),
    LabImage("postgres", "postgres", ("postgres-entrypoint.sh",), _postgres, package_major=True),
    LabImage("rest-fixture", "rest-fixture", (), _rest_fixture),
    LabImage("trino", "trino", ("trino-run.sh", "trino-health-check.sh"), _trino),
    LabImage("prometheus", "prometheus", (), _prometheus),
    LabImage("flink", "flink-jobmanager", ("flink-entrypoint.sh",), _flink),
    LabImage("kafka", "kafka", ("kafka-run.sh", "kafka-topics.sh"), _kafka),
    LabImage("kafka-connect", "kafka-connect", ("connect-run.sh",), _kafka_connect),
)}

#: service -> the lab image it runs with ``lab.images: built`` (a job runs its service's image).
SERVICE_IMAGES: dict[str, str] = {
    "seaweedfs": "seaweedfs", "seaweedfs-bucket": "seaweedfs",
    "postgres": "postgres",
    "rest-fixture-init": "rest-fixture", "rest-fixture": "rest-fixture",
    "trino": "trino",
    "prometheus": "prometheus",
    "flink-state-init": "flink", "flink-jobmanager": "flink", "flink-taskmanager": "flink",
    "kafka": "kafka", "kafka-topics": "kafka",
    "kafka-connect": "kafka-connect",
}


def built(spec: PlatformSpec) -> bool:
    """Whether the stack runs the lab's built images."""
    return spec.target is Target.DOCKER and spec.lab.images == "built"


def host_ca_certificates(directory: Path = HOST_CA_DIR) -> str:
    """The host's extra CA certificates (PEM, concatenated), for the CA_CERTIFICATES build argument."""
    if not directory.is_dir():
        return ""
    return "".join(p.read_text() for p in sorted(directory.glob("*.crt")))


def base_args(spec: PlatformSpec) -> dict[str, str]:
    """The build arguments every platform image takes: its base and the host's CA certificates."""
    return {"BASE": spec.lab.base_image, "CA_CERTIFICATES": host_ca_certificates()}


def proxy_args() -> dict[str, str]:
    """The host's proxy settings, as build arguments (never part of a tag: they do not change the image)."""
    return {name: os.environ[name] for name in PROXY_ARGS if os.environ.get(name)}


def operations_args(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, str]:
    """Build arguments of the operations image: its base, the CA, and the lab server's PostgreSQL major."""
    if built(spec) and "postgres" in artifacts.services:
        major = _major(artifacts.services["postgres"].version)  # what the built server runs (Debian's)
    else:
        major = _major(spec.services["postgres"].version)
    return {**base_args(spec), "PG_MAJOR": major}


@dataclass(frozen=True)
class Build:
    """One image to build: its tag, Dockerfile, staged context and arguments."""

    image: LabImage
    tag: str
    artifact: Artifact
    context: Context
    args: dict[str, str]


def plan(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, Build]:
    """image key -> its build, for every lab image an enabled service of the stack runs (built mode only)."""
    if not built(spec):
        return {}
    wanted = {SERVICE_IMAGES[name] for name in spec.enabled_services() if name in SERVICE_IMAGES}
    builds: dict[str, Build] = {}
    for key in sorted(wanted):
        image = IMAGES[key]
        artifact = artifacts.services.get(image.artifact_of)
        if artifact is None:
            raise LabImageError(f"services.{image.artifact_of}: no artifact resolved for the lab's {key} image "
                                f"(lab.images: built builds it from the native artifact); run `make artifacts "
                                f"STACK=<stack>`")
        context = image.context(artifact, artifacts)
        args = {**base_args(spec), **context.args}
        builds[key] = Build(image, tag_of(image, artifact, context, args), artifact, context, args)
    return builds


def built_tags(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, str]:
    """service -> the tag of the built image it runs (empty unless ``lab.images: built``)."""
    builds = plan(spec, artifacts)
    if not builds:
        return {}
    return {name: builds[SERVICE_IMAGES[name]].tag for name in spec.enabled_services() if name in SERVICE_IMAGES}


def tag_of(image: LabImage, artifact: Artifact, context: Context, args: Mapping[str, str]) -> str:
    """``lakehouse-lab/<image>:<artifact version>-<digest>``: the digest covers everything the image is made of."""
    digest = hashlib.sha256()
    for source in (image.dockerfile.read_bytes(), *((LAB_DOCKERFILES / s).read_bytes() for s in image.scripts)):
        digest.update(hashlib.sha256(source).digest())
    digest.update(f"{artifact.name}\0{artifact.version}\0{artifact.sha256}\0".encode())
    for name, text in sorted(context.texts.items()):
        digest.update(f"{name}\0{hashlib.sha256(text.encode()).hexdigest()}\0".encode())
    for name, value in sorted(args.items()):
        digest.update(f"{name}\0{hashlib.sha256(value.encode()).hexdigest()}\0".encode())
    for part in context.digest_parts:
        digest.update(part.encode() + b"\0")
    version = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in artifact.version)
    return f"{TAG_PREFIX}/{image.key}:{version}-{digest.hexdigest()[:12]}"


def refusals(spec: PlatformSpec, present: Callable[[str], bool]) -> list[str]:
    """In built mode, every enabled service with no artifact whose upstream image the engine lacks, with why."""
    from infra.services import registry

    if not built(spec):
        return []
    problems = []
    for name, service in spec.enabled_services().items():
        definition = registry()[name]
        if name in SERVICE_IMAGES or definition.container is None or definition.job_of in SERVICE_IMAGES:
            continue
        if _operations_service(spec, name):
            continue
        why = definition.why_not_on(Target.NATIVE) or "it has no native artifact"
        if definition.job_of is not None:
            owner = registry()[definition.job_of]
            why = owner.why_not_on(Target.NATIVE) or why
        if not present(service.image):
            key = definition.job_of or name
            problems.append(f"services.{key}.enabled: lab.images: built builds no image for {name} ({why}) and its "
                            f"upstream image {service.image} is not in the engine; disable services.{key}, or load "
                            "the image first (docker load)")
    return list(dict.fromkeys(problems))


def _operations_service(spec: PlatformSpec, name: str) -> bool:
    """Whether a service runs the operations image (built from the repository, in every mode)."""
    from infra.services import operations_support

    return spec.services[name].image == operations_support.OPERATIONS_IMAGE


# -- staging and building (the build driver; never the program) --------------------------------------


def _link(source: Path, target: Path) -> None:
    """A hard link of ``source`` (symlinks followed), else a copy: the context holds real files."""
    real = source.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(real, target)
    except OSError:
        shutil.copy2(real, target)


def stage(build: Build, into: Path) -> Path:
    """The build context of one image in ``into`` (replaced): Dockerfile, scripts, artifact files, texts."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    shutil.copy2(build.image.dockerfile, into / "Dockerfile")
    for script in build.image.scripts:
        shutil.copy2(LAB_DOCKERFILES / script, into / script)
    for name, source in build.context.files.items():
        _link(source, into / name)
    for name, tree in build.context.trees.items():
        for path in _files_under(tree):
            _link(path, into / name / path.relative_to(tree))
    for name, text in build.context.texts.items():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_text(text)
    return into


def _files_under(tree: Path) -> Iterator[Path]:
    for root, _, names in os.walk(tree, followlinks=True):
        for name in names:
            yield Path(root) / name


def engine() -> Any:
    """A client of DOCKER_HOST's engine (the Docker SDK for Python; imported by name: the repository's docker/
    directory would shadow it for type checkers)."""
    import importlib

    return importlib.import_module("docker").from_env(timeout=600)


def build_image(client: Any, path: Path, dockerfile: str, tag: str, args: Mapping[str, str],
                say: Callable[[str], None]) -> None:
    """One classic-builder build through the engine's API, its steps printed as they run."""
    stream = client.api.build(path=str(path), dockerfile=dockerfile, tag=tag, buildargs={**args, **proxy_args()},
                              rm=True, forcerm=True, decode=True)
    for chunk in stream:
        if "error" in chunk:
            raise LabImageError(f"building {tag} failed: {chunk['error'].strip()}")
        line = (chunk.get("stream") or "").rstrip()
        if line.startswith(("Step ", "Successfully")):
            say(f"  {tag}: {line}")
