"""``PushedImage``: an image built from files of this repository and pushed to a registry, known by its digest.

The cloud's tasks pull the platform's operations image from the stack's own registry; a tag can be re-pointed
and a locally built name exists only where it was built, so every task definition names the image by the
digest the push returned (``<repository>@sha256:...``). A dynamic resource of the project rather than
pulumi-docker's ``docker.Image`` (whose provider cannot be obtained here: ADR 0008): the Docker SDK for Python
talks to the deploying machine's engine (``DOCKER_HOST``, else the default socket).

What identifies the image is ``context_digest``: a sha256 over the context's files (path and content: the
Dockerfile, the lock and the copied sources, exactly the files sent to the engine), the Dockerfile's path, the
build arguments that shape the image and the platform. The program computes it from the files (reading them,
nothing else: evaluating never builds), and the tag is ``<version>-<first 12 of it>``. The same context gives
no diff; another one replaces the resource: a new image under a new tag, pushed by ``create``.

Lifecycle:

- ``create`` asks the registry for the tag first (``inspect_distribution``, with the given credentials): a tag
  that exists is taken as it is (the registry's tags are immutable, and the tag names the context), so a run
  that pushed and then failed before Pulumi saved its state does not push again into a refused tag. Otherwise
  it builds (the engine's classic builder, from a tar of exactly ``files``), pushes with the credentials and
  records the digest the push reports. The credentials are an input (a Pulumi secret) never returned.
- ``diff``: a replacement when the repository or the context digest changes; nothing else counts (the
  credentials change at every run, the context's path and the host's build arguments with the machine).
- ``delete`` does nothing: the image stays in the registry for task definition revisions that still name it,
  until the repository's lifecycle rule expires it (or the repository goes with the stack).

Serialized by reference to its class like every provider of the project (``lakehouse_platform.providers``); the
Docker SDK is imported only in the functions that need it.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import tarfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic

from lakehouse_platform.providers import PlainBlob, is_unknown, plain

#: What identifies the pushed image: another value of either is another image (a replacement).
IDENTITY_KEYS = ("repository", "context_digest")
#: Build arguments the building host supplies (its proxies): passed to the build, never part of the identity.
PROXY_ARGS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


class ImagePushError(Exception):
    """The image could not be built or pushed; the message names the image, the registry and the reason."""


def context_digest(root: Path, files: Sequence[str], dockerfile: str, args: Mapping[str, str], platform: str) -> str:
    """sha256 (hex) of what the image is made of: each file's path and content, the Dockerfile's path, the
    identifying build arguments and the platform."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"file\0{name}\0{hashlib.sha256((root / name).read_bytes()).hexdigest()}\0".encode())
    digest.update(f"dockerfile\0{dockerfile}\0platform\0{platform}\0".encode())
    for name, value in sorted(args.items()):
        digest.update(f"arg\0{name}\0{hashlib.sha256(value.encode()).hexdigest()}\0".encode())
    return digest.hexdigest()


def tag_of(version: str, digest: str) -> str:
    """``<version>-<first 12 of the context digest>``: a new context is a new tag (the registry's are immutable)."""
    return f"{version}-{digest[:12]}"


def context_tar(root: Path, files: Sequence[str]) -> bytes:
    """The build context: exactly ``files`` under ``root``, as a tar with fixed owners and times."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in sorted(files):
            data = (root / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if os.access(root / name, os.X_OK) else 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def problems(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with the inputs as ``(property, reason)``; a value a preview does not know yet (the
    repository, before it exists) is checked when it is known."""
    known = {k: v for k, v in props.items() if not is_unknown(v)}
    found = []
    for key in ("repository", "tag", "context", "dockerfile", "context_digest", "platform"):
        if key in props and key not in known:
            continue
        if not isinstance(known.get(key), str) or not known[key]:
            found.append((key, f"{key} must be a non-empty string"))
    files = known.get("files")
    if not isinstance(files, (list, tuple)) or not files:
        found.append(("files", "the build context needs at least one file"))
    elif known.get("dockerfile") not in files:
        found.append(("dockerfile", f"{known.get('dockerfile')!r} is not among the context's files"))
    repository = str(known.get("repository", ""))
    if "@" in repository or ":" in repository.rsplit("/", 1)[-1]:
        found.append(("repository", "a repository names no tag and no digest"))
    return found


def _docker(module: str = "docker") -> Any:
    """The Docker SDK (by name: the repository's ``docker/`` directory is no package of it)."""
    return importlib.import_module(module)


def _client() -> Any:
    try:
        client = _docker().from_env(timeout=600)
        client.ping()
    except _docker("docker.errors").DockerException as exc:
        where = os.environ.get("DOCKER_HOST", "the default socket")
        raise ImagePushError(f"building the image needs a Docker engine; none answers at {where}: {exc}") from None
    return client


def auth_config(registry: Mapping[str, Any]) -> dict[str, str]:
    """The credentials as the engine's API takes them (X-Registry-Auth)."""
    return {"username": str(registry["username"]), "password": str(registry["password"]),
            "serveraddress": str(registry.get("server") or "")}


def remote_digest(client: Any, reference: str, registry: Mapping[str, Any]) -> str | None:
    """The digest the registry holds under ``reference`` (``repository:tag``), or None when it has no such tag."""
    try:
        found = client.api.inspect_distribution(reference, auth_config=auth_config(registry))
    except _docker("docker.errors").APIError as exc:
        text = str(exc).lower()
        if exc.status_code == 404 or "manifest unknown" in text or "not found" in text:
            return None
        raise ImagePushError(f"asking the registry for {reference} failed: {exc.explanation or exc}") from None
    return str(found["Descriptor"]["digest"])


def build(client: Any, props: Mapping[str, Any], say: Callable[[str], None]) -> None:
    """Build ``repository:tag`` from the context's files with the engine's classic builder."""
    reference = f"{props['repository']}:{props['tag']}"
    context = context_tar(Path(props["context"]), props["files"])
    args = {**props.get("args", {}), **props.get("host_args", {}),
            **{name: os.environ[name] for name in PROXY_ARGS if os.environ.get(name)}}
    stream = client.api.build(fileobj=io.BytesIO(context), custom_context=True, dockerfile=props["dockerfile"],
                              tag=reference, buildargs=args, platform=props["platform"], rm=True, forcerm=True,
                              decode=True, labels={"lakehouse.context-digest": props["context_digest"]})
    for chunk in stream:
        if "error" in chunk:
            raise ImagePushError(f"building {reference} failed: {str(chunk['error']).strip()}")
        line = str(chunk.get("stream") or "").rstrip()
        if line.startswith(("Step ", "Successfully")):
            say(f"{reference}: {line}")


def push(client: Any, props: Mapping[str, Any], registry: Mapping[str, Any]) -> str:
    """Push ``repository:tag`` with the registry's credentials; the manifest digest the registry answered."""
    repository, tag = props["repository"], props["tag"]
    digest = None
    for chunk in client.api.push(repository, tag=tag, auth_config=auth_config(registry), stream=True, decode=True):
        if "error" in chunk:
            detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
            raise ImagePushError(f"pushing {repository}:{tag} to {registry.get('server') or repository} failed: "
                                 f"{str(detail).strip()}")
        aux = chunk.get("aux") or {}
        if aux.get("Digest"):
            digest = str(aux["Digest"])
    if digest is None:
        raise ImagePushError(f"pushing {repository}:{tag}: the engine reported no digest")
    return digest


def build_and_push(props: Mapping[str, Any], client: Any = None,
                   say: Callable[[str], None] = lambda _line: None) -> dict[str, Any]:
    """What ``create`` does (module docstring): the outputs, ``digest``, ``reference`` and ``pushed`` (False when
    the registry had the tag already)."""
    props = plain(dict(props))
    registry = props["registry"]
    client = client or _client()
    reference = f"{props['repository']}:{props['tag']}"
    digest = remote_digest(client, reference, registry)
    pushed = digest is None
    if digest is None:
        build(client, props, say)
        digest = push(client, props, registry)
    outputs = {k: v for k, v in props.items() if k != "registry"}
    return {**outputs, "digest": digest, "reference": f"{props['repository']}@{digest}", "pushed": pushed}


class PushedImageProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Builds and pushes one image, keyed by its context (contract: module docstring)."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        return pulumi.dynamic.CheckResult(news, [pulumi.dynamic.CheckFailure(k, why) for k, why in problems(news)])

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        outs = build_and_push(props, say=pulumi.log.info)
        return pulumi.dynamic.CreateResult(outs["reference"], outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = [key for key in IDENTITY_KEYS if plain(olds.get(key)) != plain(news.get(key))]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=changed, stables=[],
                                         delete_before_replace=False)

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the image stays for the task definitions that name it (module docstring)."""


class PushedImage(pulumi.dynamic.Resource, module="images", name="PushedImage"):
    """An image built from files of this repository and pushed to a registry (contract: module docstring)."""

    tag: pulumi.Output[str]
    digest: pulumi.Output[str]
    """The manifest digest the registry holds (``sha256:...``)."""
    reference: pulumi.Output[str]
    """``<repository>@<digest>``: what a task definition names."""

    def __init__(self, name: str, *, repository: pulumi.Input[str], version: str, context: Path,
                 files: Sequence[str], dockerfile: str, args: Mapping[str, str], host_args: Mapping[str, str],
                 platform: str, registry: pulumi.Input[Mapping[str, pulumi.Input[str]]],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        digest = context_digest(context, files, dockerfile, args, platform)
        props = {"repository": repository, "tag": tag_of(version, digest), "context": str(context),
                 "files": sorted(files), "dockerfile": dockerfile, "args": dict(args), "host_args": dict(host_args),
                 "platform": platform, "context_digest": digest, "registry": pulumi.Output.secret(registry),
                 "digest": None, "reference": None, "pushed": None}
        super().__init__(PushedImageProvider(), name, props, opts)
