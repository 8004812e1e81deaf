"""The images the cloud pushes itself (lakehouse_platform/targets/aws/images.py), under Pulumi mocks: the stack's ECR repository
with its settings, the operations image built from the lab's files and pushed with the registry's credentials,
and every task definition naming it by digest. The push itself runs for real against a local registry in
tests/lab/test_image_push.py; the repository and the token against moto in tests/targets/aws/test_aws_calls_moto.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from lakehouse_platform.components.aws import ecs
from lakehouse_platform.components.aws.context import RegistryImage
from lakehouse_platform.components.aws.pushed_image import context_digest, tag_of
from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.paths import PACKAGE_DIR
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.targets.aws import images
from lakehouse_platform.version import PLATFORM_VERSION
from tests.support import REPO_ROOT
from tests.support.aws_graph import ALL_RUNS, containers, policy, the
from tests.support.harness import ECR_REGISTRY, ProgramRun, pushed_image_outputs
from tests.support.rendered import is_secret, reveal
from tests.support.stacks import with_changes

REPOSITORY = "aws:ecr/repository:Repository"
LIFECYCLE = "aws:ecr/lifecyclePolicy:LifecyclePolicy"
PUSHED = "pulumi-python:dynamic/images:PushedImage"
DIGEST_FORM = re.compile(rf"{re.escape(ECR_REGISTRY)}/lakehouse-cloud/operations@sha256:[0-9a-f]{{64}}")


def _pushed(run: ProgramRun) -> dict[str, Any]:
    return the(run, PUSHED).inputs


def _reference(run: ProgramRun) -> str:
    """The reference the mocks' registry answered the push with."""
    return str(pushed_image_outputs(_pushed(run))["reference"])


def test_the_stack_has_one_repository_with_immutable_tags_scans_and_the_platforms_key(cloud):
    repository = the(cloud, REPOSITORY).inputs
    assert repository["name"] == "lakehouse-cloud/operations"
    assert repository["imageTagMutability"] == "IMMUTABLE"
    assert repository["imageScanningConfiguration"] == {"scanOnPush": True}
    assert repository["encryptionConfigurations"] == [
        {"encryptionType": "KMS", "kmsKey": "arn:aws:kms:eu-west-1:123456789012:lakehouse-key"}]
    assert repository["forceDelete"] is True  # tear-down takes the images with it
    assert cloud.layer_of(the(cloud, REPOSITORY)) == "lakehouse-observability"


def test_the_lifecycle_keeps_a_count_of_images_and_never_expires_one_by_age():
    rules = json.loads(images.lifecycle_policy())["rules"]
    by_status = {rule["selection"]["tagStatus"]: rule for rule in rules}
    assert by_status["untagged"]["selection"] == {"tagStatus": "untagged", "countType": "sinceImagePushed",
                                                  "countUnit": "days", "countNumber": images.UNTAGGED_DAYS}
    assert by_status["any"]["selection"] == {"tagStatus": "any", "countType": "imageCountMoreThan",
                                             "countNumber": images.KEPT_IMAGES}
    # ECR evaluates the lowest priority first; a tagStatus any rule must come last.
    assert [r["rulePriority"] for r in rules] == [1, 2] and rules[-1]["selection"]["tagStatus"] == "any"
    assert all(r["action"] == {"type": "expire"} for r in rules)


def test_the_graphs_lifecycle_policy_is_the_rule_on_the_stacks_repository(cloud):
    lifecycle = the(cloud, LIFECYCLE).inputs
    assert lifecycle["repository"] == "lakehouse-cloud/operations"
    assert json.loads(lifecycle["policy"]) == json.loads(images.lifecycle_policy())


def test_the_image_is_built_from_the_labs_files_and_pushed_with_the_registrys_credentials(cloud):
    pushed = _pushed(cloud)
    assert pushed["repository"] == f"{ECR_REGISTRY}/lakehouse-cloud/operations"
    # What the package's .dockerignore admits (the lab's context, tests/lab/test_images.py): its runtime, no more.
    assert pushed["files"] == sorted({
        ".dockerignore", "runtime/image/Dockerfile", "runtime/image/operations.lock", "__init__.py",
        *(str(p.relative_to(PACKAGE_DIR)) for p in (PACKAGE_DIR / "runtime").glob("*.py")),
        *(str(p.relative_to(PACKAGE_DIR)) for p in (PACKAGE_DIR / "runtime" / "exporter").glob("*.py")),
        # each service's runtime code, in its package (whose __init__ imports nothing)
        *(str(p.relative_to(PACKAGE_DIR)) for pattern in ("services/__init__.py", "services/*/__init__.py",
                                                           "services/*/runtime.py") for p in PACKAGE_DIR.glob(pattern))})
    assert pushed["dockerfile"] == support.OPERATIONS_DOCKERFILE and pushed["context"] == str(PACKAGE_DIR)
    assert set(pushed["args"]) == {"BASE", "PG_MAJOR"} and set(pushed["host_args"]) == {"CA_CERTIFICATES"}
    assert pushed["platform"] == "linux/amd64"
    digest = context_digest(PACKAGE_DIR, pushed["files"], pushed["dockerfile"], pushed["args"], pushed["platform"])
    assert pushed["context_digest"] == digest and pushed["tag"] == tag_of(PLATFORM_VERSION, digest)
    # The registry's own credentials (aws.ecr.get_authorization_token), a secret in the state.
    assert is_secret(pushed["registry"])
    assert reveal(pushed["registry"]) == {"server": f"https://{ECR_REGISTRY}", "username": "AWS",
                                          "password": "test-ecr-password"}


@pytest.mark.parametrize("run_name", [*ALL_RUNS, "cloud_with_tables"])
def test_every_task_running_the_operations_image_names_the_pushed_image_by_digest(run_name, request):
    run: ProgramRun = request.getfixturevalue(run_name)
    reference = _reference(run)
    assert DIGEST_FORM.fullmatch(reference)
    by_container = {(task, c["name"]): c["image"] for task, c in containers(run)}
    runs_it = {key for key, image in by_container.items() if "/operations" in image or "lakehouse/" in image}
    expected = {("lakehouse-lakehouse-exporter", "lakehouse-exporter")}
    if run.of_type("aws:scheduler/schedule:Schedule"):
        expected.add(("lakehouse-maintenance", "maintenance"))
    if ("lakehouse-polaris-catalog", "polaris-catalog") in by_container:  # Polaris's access job (ADR 0012)
        expected.add(("lakehouse-polaris-catalog", "polaris-catalog"))
    assert runs_it == expected, by_container
    assert all(by_container[key] == reference for key in runs_it)
    # Every other image is an upstream one from its own registry, never the platform's local name.
    assert not any(image.startswith(support.OPERATIONS_IMAGE.split(":")[0]) for image in by_container.values())


def test_only_the_tasks_running_it_may_pull_from_the_repository(cloud_with_tables):
    run = cloud_with_tables
    grants = {r.name: json.loads(r.inputs["policy"]) for r in run.of_type("aws:iam/rolePolicy:RolePolicy")
              if r.name.endswith("-execution-pulls-images")}
    assert set(grants) == {"lakehouse-lakehouse-exporter-execution-pulls-images",
                           "lakehouse-maintenance-execution-pulls-images",
                           "lakehouse-polaris-catalog-execution-pulls-images"}
    for name, document in grants.items():
        statements = {s["Sid"]: s for s in document["Statement"]}
        assert statements["PullOwnImages"]["Resource"] == ["arn:aws:ecr:eu-west-1:123456789012:lakehouse-operations"]
        assert set(statements["PullOwnImages"]["Action"]) == {"ecr:BatchCheckLayerAvailability",
                                                              "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"}
        assert statements["RegistryToken"]["Action"] == "ecr:GetAuthorizationToken", name
    role_of = {r.name: r.inputs["role"] for r in run.of_type("aws:iam/rolePolicy:RolePolicy")}
    assert role_of["lakehouse-maintenance-execution-pulls-images"] == "lakehouse-maintenance-execution-id"
    assert policy(run, "lakehouse-maintenance-execution-pulls-images")["Statement"][0]["Resource"] == "*"


def test_the_stack_outputs_say_which_image_runs(cloud):
    assert cloud.outputs["operations_repository"] == f"{ECR_REGISTRY}/lakehouse-cloud/operations"
    assert cloud.outputs["operations_image"] == _reference(cloud)


def test_no_image_key_is_left_to_set_by_hand():
    text = (REPO_ROOT / "Pulumi.cloud.yaml").read_text()
    assert "image" not in text
    pages = "\n".join(p.read_text() for p in (REPO_ROOT / "docs").rglob("*.md"))
    assert "services.lakehouse-exporter.image" not in pages


def test_the_image_is_pushed_only_when_an_enabled_part_runs_it():
    from lakehouse_platform.config import load_platform
    from lakehouse_platform.services.registry import registry

    def runs(platform: dict[str, Any]) -> bool:
        spec = load_platform(platform)
        return images.runs_operations_image(spec, registry().aws_parts(spec))

    platform = with_changes()
    assert runs(platform)  # the exporter, and the maintenance tasks
    platform.setdefault("services", {})["lakehouse-exporter"] = {"enabled": False}
    assert runs(platform)  # the maintenance tasks still
    platform["maintenance"] = []
    assert not runs(platform)  # no part runs it: no repository, nothing built
    platform["services"]["lakehouse-exporter"] = {"enabled": True, "image": "registry.example/ops:1.0"}
    assert not runs(platform)  # a stack that names an image of its own runs that one


def test_a_container_naming_the_operations_image_that_was_not_pushed_is_refused():
    container = ecs.Container(name="exporter", image=support.OPERATIONS_IMAGE, memory_mib=256)
    with pytest.raises(ecs.ImageNotPushed, match=rf"exporter \(aws\): runs lakehouse/operations:{PLATFORM_VERSION}, which the "
                                                  "stack did not push"):
        ecs.image_reference(container, {}, frozenset({support.OPERATIONS_IMAGE}))
    pushed = {support.OPERATIONS_IMAGE: RegistryImage("repo@sha256:1", "arn")}
    assert ecs.image_reference(container, pushed, frozenset({support.OPERATIONS_IMAGE})) == "repo@sha256:1"
    upstream = ecs.Container(name="trino", image="trinodb/trino:483", memory_mib=256)
    assert ecs.image_reference(upstream, pushed, frozenset({support.OPERATIONS_IMAGE})) == "trinodb/trino:483"


def test_the_repository_name_is_one_ecr_accepts():
    spec = cached_spec()
    assert images.repository_name(spec, "Prod_EU") == "lakehouse-prod_eu/operations"
    assert images.repository_name(spec, "cloud") == "lakehouse-cloud/operations"
    assert re.fullmatch(r"(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*",
                        images.repository_name(spec, "my.stack+1"))


def cached_spec() -> PlatformSpec:
    from lakehouse_platform.config import load_platform
    from tests.support.stacks import cloud_platform

    return load_platform(cloud_platform())
