"""JDKs on the host (found, never installed), and small Java sources compiled into reproducible jars."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache as memoize
from pathlib import Path

from lakehouse_platform.artifacts import cache
from lakehouse_platform.artifacts.artifact import ArtifactError

#: Java majors the platform's JVMs need (a service definition may ask for more: Trino).
JAVA_FOR_JVM_SERVICES = 17


@memoize
def java_major(home: Path) -> int | None:
    """Major version printed by ``<home>/bin/java -version`` (``1.8.0_x`` -> 8), or None."""
    java = home / "bin" / "java"
    if not os.access(java, os.X_OK):
        return None
    try:
        result = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java(min_major: int) -> Path:
    """Home of the JDK with the lowest major version >= ``min_major`` among ``$JAVA_HOME`` and ``/usr/lib/jvm/*``.

    The lowest satisfying major is the one the consumer is most likely tested with (Spark on 17, Trino on
    24+). Symlinked duplicates count once. Raises ``ArtifactError`` listing what was found.
    """
    candidates: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(sorted(p for p in jvm.iterdir() if p.is_dir()))
    found: dict[Path, int] = {}
    for home in candidates:
        real = home.resolve()
        major = java_major(real)
        if major is not None and real not in found:
            found[real] = major
    fitting = sorted((major, str(home)) for home, major in found.items() if major >= min_major)
    if not fitting:
        seen = ", ".join(f"{home} ({major})" for home, major in found.items()) or "none"
        raise ArtifactError(
            f"no JDK >= {min_major} in $JAVA_HOME or /usr/lib/jvm (found: {seen}); "
            f"install one, e.g. apt-get install openjdk-{min_major}-jdk-headless, or set JAVA_HOME"
        )
    return Path(fitting[0][1])


def compile_jar(sources: Sequence[Path], classpath: Sequence[Path], out: Path, release: int = 17) -> Path:
    """``javac`` the sources against ``classpath`` into ``out`` with fixed timestamps: same bytes every build."""
    jdk = find_java(release)
    javac, jar_tool = jdk / "bin" / "javac", jdk / "bin" / "jar"
    if not javac.exists():
        raise ArtifactError(f"{jdk} is a JRE without javac; a JDK >= {release} is needed")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as work:
        classes = Path(work) / "classes"
        cache.run([str(javac), "--release", str(release), "-cp", ":".join(map(str, classpath)), "-d", str(classes),
                   *map(str, sources)])
        partial = str(out) + ".part"
        cache.run([str(jar_tool), "--create", "--date=2020-01-01T00:00:00Z", "--file", partial, "-C", str(classes),
                   "."])
        os.replace(partial, out)
    return out


#: Jar entries an application jar must not carry over from the jars it bundles: signatures (they no longer
#: match the merged jar), the bundled jars' own manifests, and module descriptors (the result is no module).
_DROPPED = ("META-INF/MANIFEST.MF", "module-info.class", "META-INF/versions/9/module-info.class")
_SIGNATURE_SUFFIXES = (".SF", ".DSA", ".RSA", ".EC")
_FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def application_jar(parts: Sequence[Path], out: Path, main_class: str | None = None) -> Path:
    """One jar holding every entry of ``parts`` (in order), the way a shading plugin assembles an uber jar.

    ``META-INF/services/*`` files are concatenated (each connector registers its factories there), signatures
    and the parts' manifests are dropped, any other entry present twice keeps its first copy. Timestamps are
    fixed and entries written in a stable order, so the same parts give the same bytes.
    """
    import zipfile

    def entry(name: str) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(name, _FIXED_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        return info

    services: dict[str, list[str]] = {}
    seen: set[str] = set()
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    with zipfile.ZipFile(partial, "w") as target:
        manifest = "Manifest-Version: 1.0\r\n" + (f"Main-Class: {main_class}\r\n" if main_class else "") + "\r\n"
        target.writestr(entry("META-INF/MANIFEST.MF"), manifest)
        seen.add("META-INF/MANIFEST.MF")
        for part in parts:
            with zipfile.ZipFile(part) as source:
                for info in source.infolist():
                    name = info.filename
                    if info.is_dir() or name in _DROPPED or (
                            name.startswith("META-INF/") and name.upper().endswith(_SIGNATURE_SUFFIXES)):
                        continue
                    if name.startswith("META-INF/services/") and name.count("/") == 2:
                        lines = source.read(name).decode("utf-8", "replace").splitlines()
                        services.setdefault(name, [])
                        services[name] += [line for line in lines if line.strip() and line not in services[name]]
                        continue
                    if name in seen:
                        continue
                    seen.add(name)
                    target.writestr(entry(name), source.read(name))
        for name in sorted(services):
            target.writestr(entry(name), "\n".join(services[name]) + "\n")
    os.replace(partial, out)
    return out
