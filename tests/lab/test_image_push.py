"""The cloud's push path for real: the operations image built on a Docker engine and pushed to a registry with its
credentials by the code ``PushedImage``'s provider runs (``lakehouse_platform.components.aws.pushed_image.build_and_push``), then the
registry's HTTP API asked what it holds.

The registry is Debian's ``docker-registry`` on a loopback port with basic authentication (tests/support/
local_registry.py): ECR's stand-in. The props are the ones the cloud program registers for its image (under mocks),
with three things swapped: the repository is the local registry's, the credentials are its user's instead of
ECR's token, and the build arguments are CI's lab's (its base image and PostgreSQL major), so the build reuses the
layers ``make lab-images`` left in the engine and takes seconds (a cold build takes minutes). The cloud's own
arguments name a base from Docker Hub and PostgreSQL's apt repository, neither of which CI reaches.

Marker ``lab``: runs where an engine answers (``make lab-test``; CI's lab stage, after ``make lab-base`` and
``make lab-images``), the lab's base image is in it, and ``docker-registry`` is installed (the engine script installs
it with the engine: ``apt-get install docker-registry``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from lakehouse_platform.components.aws import pushed_image as pi
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.targets.aws import images
from tests.support import local_registry as registry_support
from tests.support.harness import ProgramRun
from tests.support.local_registry import LocalRegistry

pytestmark = pytest.mark.lab

REPOSITORY = "lakehouse-test/operations"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    if not registry_support.installed():
        pytest.skip(f"{registry_support.BINARY} is missing: apt-get install docker-registry")
    with registry_support.local_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture(scope="module")
def lab_args(engine: Any) -> dict[str, str]:
    """The operations image's build arguments in CI's lab (what ``make lab-images`` built it with)."""
    from lakehouse_platform.config import load_platform
    from lakehouse_platform.control.image_builds import present
    from lakehouse_platform.services.resolver import CacheResolver
    from lakehouse_platform.targets.lab_images import operations_args
    from tests.support.stacks import built_lab_platform

    spec = load_platform(built_lab_platform())
    if not present(engine, spec.lab.base_image):
        pytest.skip(f"the lab's base image {spec.lab.base_image} is not in the engine: make lab-base")
    return operations_args(spec, CacheResolver().resolve(spec))


@pytest.fixture
def props(cloud_run: ProgramRun, registry: LocalRegistry, lab_args: dict[str, str]) -> dict[str, Any]:
    """The cloud program's props for its image, pointed at the local registry with the lab's build arguments."""
    (image,) = cloud_run.of_type("pulumi-python:dynamic/images:PushedImage")
    rendered = {k: v for k, v in image.inputs.items() if not k.startswith("__")}
    args = {k: v for k, v in lab_args.items() if k not in images.HOST_ARGS}
    digest = pi.context_digest(support.OPERATIONS_CONTEXT, rendered["files"], rendered["dockerfile"], args,
                               rendered["platform"])
    return {**rendered, "repository": f"{registry.host}/{REPOSITORY}", "args": args,
            "host_args": {k: lab_args[k] for k in images.HOST_ARGS}, "context_digest": digest,
            "tag": pi.tag_of("0.3.0", digest), "registry": registry.credentials}


def test_the_image_is_pushed_with_the_registrys_credentials_and_named_by_the_digest_it_holds(
        engine: Any, registry: LocalRegistry, props: dict[str, Any]) -> None:
    reference = f"{props['repository']}:{props['tag']}"
    try:
        # Wrong credentials: refused by the registry before anything is built.
        with pytest.raises(pi.ImagePushError, match=f"asking the registry for {reference} failed: .*unauthorized"):
            pi.build_and_push({**props, "registry": {**registry.credentials, "password": "wrong"}}, engine)

        outs = pi.build_and_push(props, engine, say=print)
        assert outs["pushed"] is True and "registry" not in outs  # the credentials are never an output
        digest = outs["digest"]
        assert outs["reference"] == f"{props['repository']}@{digest}"

        # What the registry holds under the tag is that digest, and its bytes hash to it.
        assert registry.manifest(REPOSITORY, props["tag"], auth=False).status_code == 401  # it took credentials
        manifest = registry.manifest(REPOSITORY, props["tag"])
        manifest.raise_for_status()
        assert manifest.headers["Docker-Content-Digest"] == digest
        assert "sha256:" + hashlib.sha256(manifest.content).hexdigest() == digest
        # ... and that image is this context's (its label), built for the tasks' platform.
        config = json.loads(registry.blob(REPOSITORY, json.loads(manifest.content)["config"]["digest"]))
        assert config["config"]["Labels"]["lakehouse.context-digest"] == props["context_digest"]
        assert (config["os"], config["architecture"]) == ("linux", "amd64")
        assert registry.manifest(REPOSITORY, digest).headers["Docker-Content-Digest"] == digest

        # The reference a task definition names pulls that image.
        engine.images.remove(reference, noprune=True)
        pulled = engine.images.pull(outs["reference"], auth_config=pi.auth_config(registry.credentials))
        assert pulled.labels["lakehouse.context-digest"] == props["context_digest"]

        # The same context again (a run that pushed, then failed before Pulumi saved it): the registry's tag is
        # taken as it is, nothing is built or pushed into the immutable tag.
        again = pi.build_and_push(props, engine)
        assert (again["pushed"], again["digest"]) == (False, digest)
    finally:
        for image in engine.images.list(name=props["repository"]):
            engine.images.remove(image.id, force=True, noprune=True)
