"""Flink's artifacts: the distribution (the ``apache-flink-libraries`` sdist from PyPI), the locked jars, the
compiled job; and the Managed Service for Apache Flink application jar.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from pathlib import Path

from lakehouse_platform.artifacts import cache, java, maven, pypi
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.flink.config import JOB_MAIN, JOBMANAGER, KAFKA_SOURCE, MSF, MSF_RUNTIME, job_source

# -- what runs: the distribution, the extra jars, the job ------------------------------------------
#: Flink release -> the PyPI sdist that is its distribution (``deps/lib``, ``deps/bin``), sha256 pinned.
#: PyPI serves apache-flink-libraries as an sdist only; the sha256 is the one PyPI's JSON API publishes.
DISTRIBUTIONS = {
    # The version before the pin: the version-bump test (tests/e2e/test_bumps.py) moves the cluster from it.
    "2.1.2": pypi.PinnedFile("apache-flink-libraries", "2.1.2",
                              "fc03d1879a0a8230df9f9cbca13aef89a0d39fc89acda431b27af41c9f25f40b"),
    "2.1.3": pypi.PinnedFile("apache-flink-libraries", "2.1.3",
                              "b48d3944755b9303f99d205ea1a9bcb798fc563a872c782393fb466f16d4f91c"),
}


#: The jars of the distribution's lib/ the cluster runs (flink-dist last, as Flink's config.sh orders it).
#: flink-cep is needed although no job uses CEP: the planner loads its classes (NoClassDefFoundError:
#: org/apache/flink/cep/functions/PatternProcessFunction without it). Not kept: flink-scala, flink-csv,
#: flink-connector-files, log4j-layout-template-json, opt/ and plugins/.
LIB_JARS = ("flink-cep", "flink-json", "flink-table-api-java-uber", "flink-table-planner-loader",
            "flink-table-runtime", "log4j-1.2-api", "log4j-api", "log4j-core", "log4j-slf4j-impl")


DIST_JAR = "flink-dist"


UTILS_JAR = "bin/bash-java-utils.jar"


JAR_LOCK = maven.JarLock.read(Path(__file__).with_name("flink.jars.json"))


#: Jars of the lock only a Kafka source uses (the cluster carries them anyway: 10.5 MB, loaded lazily).
KAFKA_JARS = ("flink-connector-kafka", "kafka-clients")


JOB_SOURCE = Path(__file__).with_name("orders-job") / "OrdersToIceberg.java"


JOB_JAR = "job/orders-to-iceberg.jar"


#: The job's classes run on Flink 2.1 here and on Managed Service for Apache Flink's FLINK-1_20 (Java 11).
JOB_RELEASE = 11


def distribution(ctx: ServiceContext) -> pypi.PinnedFile:
    version = ctx.spec.services[JOBMANAGER].version
    if version not in DISTRIBUTIONS:
        raise ArtifactError(f"no pinned distribution for Flink {version}; add its PyPI sdist sha256 to "
                            f"flink.DISTRIBUTIONS (known: {', '.join(DISTRIBUTIONS)})")
    return DISTRIBUTIONS[version]


def artifact_key(ctx: ServiceContext) -> str:
    """Named by the pins: the distribution, the jar lock and the job's source."""
    version = ctx.spec.services[JOBMANAGER].version
    sdist = DISTRIBUTIONS.get(version)
    job = hashlib.sha256(JOB_SOURCE.read_bytes()).hexdigest()[:12]
    return f"flink:{version}:{(sdist.sha256 if sdist else 'unpinned')[:12]}:lock-{JAR_LOCK.digest()[:12]}:job-{job}"


def _wanted(member: str, version: str) -> str | None:
    """The path under the artifact's home of a sdist member it keeps (lib/ jars, the BashJavaUtils jar)."""
    prefix = f"apache_flink_libraries-{version}/deps/"
    if not member.startswith(prefix):
        return None
    rest = member[len(prefix):]
    if rest == UTILS_JAR:
        return rest
    name = rest.removeprefix("lib/")
    if rest.startswith("lib/") and name.endswith(".jar") and "/" not in name:
        stem = name.rsplit("-", 1)[0]
        if stem in (*LIB_JARS, DIST_JAR):
            return rest
    return None


def fetch_distribution(ctx: ServiceContext) -> Artifact:
    """The cluster's files in the cache: lib/ and bin/ from the sdist, ext/ from Maven, job/ compiled.

    ``classpath`` is the cluster classpath in Flink's order (lib/ sorted, flink-dist last), then the
    Hadoop client, then Iceberg's runtime and AWS bundle, then the Kafka source's jars.
    """
    key = artifact_key(ctx)
    pin = distribution(ctx)

    def build() -> cache.Entry:
        home = cache.cache_root() / "flink" / f"{pin.version}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        staging = home.with_name(home.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        sdist = pypi.fetch_file(pin)
        cache.console.print(f"[bold]flink[/]: unpacking lib/ and bin/ of {sdist.name}")
        with tarfile.open(sdist, "r|gz") as archive:
            for member in archive:
                target = _wanted(member.name, pin.version)
                if target is None or not member.isfile():
                    continue
                dest = staging / target
                dest.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None
                with open(dest, "wb") as out:
                    while chunk := source.read(cache.CHUNK):
                        out.write(chunk)
        lib = sorted((staging / "lib").glob("*.jar"))
        missing = [n for n in (*LIB_JARS, DIST_JAR) if not any(p.name.rsplit("-", 1)[0] == n for p in lib)]
        if missing or not (staging / UTILS_JAR).is_file():
            raise ArtifactError(f"{sdist.name} lacks {', '.join(missing) or UTILS_JAR}: not Flink's distribution")
        ext = staging / "ext"
        ext.mkdir()
        for locked, jar in zip(JAR_LOCK.jars, maven.fetch_all(JAR_LOCK.jars), strict=True):
            (ext / locked.coordinate.filename).symlink_to(os.path.relpath(jar, ext))
        dist = next(p for p in lib if p.name.startswith(f"{DIST_JAR}-"))
        api = next(p for p in lib if p.name.startswith("flink-table-api-java-uber-"))
        java.compile_jar([JOB_SOURCE], [dist, api], staging / JOB_JAR, release=JOB_RELEASE)
        if home.exists():  # an entry whose files no longer verify: replaced whole
            shutil.rmtree(home)
        os.replace(staging, home)
        lib_final = sorted((home / "lib").glob("*.jar"))
        ordered = [p for p in lib_final if not p.name.startswith(f"{DIST_JAR}-")] + \
                  [p for p in lib_final if p.name.startswith(f"{DIST_JAR}-")]
        order = ("hadoop-client-api", "hadoop-client-runtime", "iceberg-flink-runtime", "iceberg-aws-bundle",
                 *KAFKA_JARS)
        extra = sorted((home / "ext").iterdir(), key=lambda p: next(i for i, n in enumerate(order)
                                                                    if p.name.startswith(n)))
        files = cache.tree_files(home)  # lib/, bin/, job/ (ext/ holds links into the Maven cache)
        files.update({f"ext/{p.name}": cache.file_record(p) for p in extra})
        entry = {
            "name": "flink", "requested": pin.version, "version": pin.version, "path": str(home), "root": str(home),
            "files": files, "sha256": cache.tree_digest(files), "classpath": [str(p) for p in (*ordered, *extra)],
            "source": f"PyPI {pin.project}=={pin.version} (sdist) + Maven Central ({JAR_LOCK.name}) + javac",
            "sdist_sha256": pin.sha256,
            "notes": [f"job {JOB_MAIN} compiled from {JOB_SOURCE.name} (--release {JOB_RELEASE})"],
        }
        sdist.unlink()  # 310 MB; its sha256 stays in the entry (sdist_sha256)
        return entry

    return cache.obtain(key, build)


MSF_LOCK_PATH = Path(__file__).with_name("flink-msf.jars.json")


MSF_LOCK = maven.JarLock.read(MSF_LOCK_PATH)


MSF_ROLES = {j["artifact"]: j["role"] for j in json.loads(MSF_LOCK_PATH.read_text())["jars"]}


def msf_jars(spec: PlatformSpec, *roles: str) -> list[maven.LockedJar]:
    return [j for j in MSF_LOCK.jars if MSF_ROLES[j.coordinate.artifact] in roles]


def msf_key(ctx: ServiceContext) -> str:
    kafka = job_source(ctx.spec) == KAFKA_SOURCE
    job = hashlib.sha256(JOB_SOURCE.read_bytes()).hexdigest()[:12]
    return f"flink-msf:{MSF_RUNTIME}:lock-{MSF_LOCK.digest()[:12]}:job-{job}:{KAFKA_SOURCE if kafka else 'generator'}"


def fetch_msf_jar(ctx: ServiceContext) -> Artifact:
    """The application jar: the job compiled against Flink 1.20's API, bundled with what it needs on MSF."""
    key = msf_key(ctx)
    roles = ("bundle", KAFKA_SOURCE) if job_source(ctx.spec) == KAFKA_SOURCE else ("bundle",)  # flink-msf.jars.json

    def build() -> cache.Entry:
        out_dir = cache.cache_root() / "flink-msf" / hashlib.sha256(key.encode()).hexdigest()[:12]
        compile_jars = maven.fetch_all(msf_jars(ctx.spec, "compile", "bundle"))
        locked = msf_jars(ctx.spec, *roles)
        bundled = maven.fetch_all(locked)
        job = java.compile_jar([JOB_SOURCE], compile_jars, out_dir / "job-classes.jar", release=JOB_RELEASE)
        cache.console.print(f"[bold]flink-msf[/]: assembling the application jar ({len(bundled)} jars bundled)")
        jar = java.application_jar([job, *bundled], out_dir / "lakehouse-orders-msf.jar", main_class=JOB_MAIN)
        job.unlink()
        entry = {
            "name": "flink-msf", "requested": MSF_RUNTIME, "version": "1.20", "path": str(jar), "root": str(out_dir),
            "files": {jar.name: cache.file_record(jar)}, "sha256": cache.sha256_file(jar), "main_class": JOB_MAIN,
            "source": f"javac + Maven Central ({MSF_LOCK.name}: {', '.join(j.coordinate.filename for j in locked)})",
            "notes": [f"runs on {MSF} {MSF_RUNTIME} (Java 11); Iceberg 1.10.1 (1.11.0 needs Java 17)"],
        }
        return entry

    return cache.obtain(key, build)
