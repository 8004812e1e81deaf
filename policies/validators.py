"""The platform's contracts as plain rules: functions over plain data, returning violation messages.

Nothing here imports ``pulumi_policy`` (or ``pulumi``): the unit tests call these functions on the
resources the program registers under Pulumi mocks, and ``policies/__main__.py`` only wraps them in
``ResourceValidationPolicy`` / ``StackValidationPolicy`` objects.

Data model
----------
``Resource``
    One resource as the engine (or the mocks) shows it: type token, name, URN, the parent's URN and
    the input properties with their wire names (``envs``, ``healthcheck``, ``containerDefinitions``,
    ...). Values keep Pulumi's wire forms: a secret is the map ``{SIG_KEY: SECRET_SIG, "value": v}``
    and a value not known during preview is one of the ``UNKNOWN_*`` sentinel strings. Rules never
    read an unknown value as a violation (it is decided at ``pulumi up``), and never print a secret.

``StackContext``
    What the stack promises, taken from its ``lakehouse:platform`` config (the ownership table,
    the warehouse prefixes, the recovery promise). ``policies/config.py`` renders it; the pack
    receives it as policy config or reads it from the stack config the engine hands to it
    (see ``policies/__main__.py``). Rules that need it and do not get it say so.

Messages
--------
Every message names the resource, its layer and owner, and the rule it breaks::

    docker:Container 'rest-fixture' (layer catalog, owner platform) breaks catalog-no-in-memory-sqlite: ...

The layer comes from the resource's ``lakehouse.layer`` label/tag, else from the layer component
it was built under (the URN's parent type chain holds ``platform:layers:<Layer>``); the owner from
its ``lakehouse.owner`` label/tag, else from the stack's ownership table.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

# --------------------------------------------------------------------------------------------
# Constants shared with the program (tests assert they match infra.spec / infra.layers.base)
# --------------------------------------------------------------------------------------------

LAYER_NAMES: tuple[str, ...] = (
    "storage", "catalog", "compute", "governance", "orchestration", "observability", "recovery",
)
LABEL_PLATFORM = "lakehouse.platform"
LABEL_LAYER = "lakehouse.layer"
LABEL_OWNER = "lakehouse.owner"
LABEL_SERVICE = "lakehouse.service"
LAYER_COMPONENT_PREFIX = "platform:layers:"

# Pulumi's wire encoding of secrets (sdk/go/common/resource/properties.go).
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
# Values not known during preview.
UNKNOWN_VALUES = frozenset({
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",  # bool
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421",  # number
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9",  # string
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",  # array
    "030794c1-ac77-496b-92df-f27374a8bd58",  # asset
    "e48ece36-62e2-4504-bad9-02848725956a",  # archive
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",  # object
})

# A dynamic resource's serialized provider (code, not configuration): never scanned.
PROVIDER_KEY = "__provider"

# Resource types
DOCKER_CONTAINER = "docker:index/container:Container"
DOCKER_REMOTE_IMAGE = "docker:index/remoteImage:RemoteImage"
LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"
ECS_TASK_DEFINITION = "aws:ecs/taskDefinition:TaskDefinition"
ECS_SERVICE = "aws:ecs/service:Service"
LB_TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"
IAM_ACCESS_KEY = "aws:iam/accessKey:AccessKey"
RDS_INSTANCE = "aws:rds/instance:Instance"
RDS_CLUSTER = "aws:rds/cluster:Cluster"
BACKUP_PLAN = "aws:backup/plan:Plan"
S3_BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
S3_VERSIONING = ("aws:s3/bucketVersioning:BucketVersioning", "aws:s3/bucketVersioningV2:BucketVersioningV2")
S3_ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
S3_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
S3_ACCOUNT_PUBLIC_ACCESS_BLOCK = "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock"
S3_LIFECYCLE = (
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2",
)
PUBLIC_ACCESS_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
KMS_ALGORITHMS = ("aws:kms", "aws:kms:dsse")
REST_FIXTURE_SERVICES = ("rest-fixture", "rest-fixture-init")
REST_FIXTURE_IMAGE = "apache/iceberg-rest-fixture"
STORE_SERVICE = "seaweedfs"

# --------------------------------------------------------------------------------------------
# Plain data
# --------------------------------------------------------------------------------------------


@dataclass
class Resource:
    """One registered resource: type, name, inputs (wire names and wire forms), URN and parent URN.

    ``provider`` holds the inputs of the resource's explicit provider (its ``defaultTags`` count as
    tags); ``deps`` maps an input name to the URNs it depends on (when the engine says); ``id`` is
    the physical id when known (mocks make it up), used only to link S3 sub-resources to buckets.
    """

    type: str
    name: str
    props: dict[str, Any]
    urn: str = ""
    parent: str | None = None
    provider: dict[str, Any] | None = None
    deps: dict[str, list[str]] = field(default_factory=dict)
    id: str | None = None


class Violation(str):
    """A violation message; ``urn`` (when set) is the resource a stack policy reports it against."""

    urn: str | None

    def __new__(cls, message: str, urn: str | None = None) -> "Violation":
        obj = super().__new__(cls, message)
        obj.urn = urn
        return obj


@dataclass(frozen=True)
class StackContext:
    """What the stack's config promises, as far as the policies need it."""

    stack: str
    target: str
    platform: str
    layer_owners: Mapping[str, str]
    services: Mapping[str, Mapping[str, Any]]  # name -> {"layer", "owner", "enabled"}
    warehouse_bucket: str = "warehouse"
    warehouse_prefixes: tuple[str, ...] = ("",)
    backup_retention_days: int = 7

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StackContext":
        storage = data.get("storage") or {}
        recovery = data.get("recovery") or {}
        return cls(
            stack=str(data.get("stack", "")),
            target=str(data.get("target", "")),
            platform=str(data.get("platform", "")),
            layer_owners={str(k): str(v["owner"] if isinstance(v, Mapping) else v)
                          for k, v in (data.get("layers") or {}).items()},
            services={str(k): dict(v) for k, v in (data.get("services") or {}).items()},
            warehouse_bucket=str(storage.get("bucket", "warehouse")),
            warehouse_prefixes=tuple(str(p) for p in storage.get("warehouse_prefixes", [""])),
            backup_retention_days=int(recovery.get("backup_retention_days", 7)),
        )

    def owner_of(self, layer: str | None, service: str | None = None) -> str | None:
        """The owner the ownership table names for a service (if known) or else for its layer."""
        if service and service in self.services and self.services[service].get("owner"):
            return str(self.services[service]["owner"])
        if layer:
            return self.layer_owners.get(layer)
        return None


@dataclass(frozen=True)
class PolicyDef:
    """One rule: its name, what it promises, whether it sees one resource or the whole stack."""

    name: str
    description: str
    scope: str  # "resource" or "stack"
    check: Callable[..., list[str]]
    level: str = "mandatory"
    needs_context: bool = False


# --------------------------------------------------------------------------------------------
# Value helpers
# --------------------------------------------------------------------------------------------


def is_unknown(value: Any) -> bool:
    """Whether a value is not known during preview."""
    return isinstance(value, str) and value in UNKNOWN_VALUES


def is_secret(value: Any) -> bool:
    """Whether a value is a secret in Pulumi's wire form."""
    return isinstance(value, Mapping) and value.get(SIG_KEY) == SECRET_SIG


def reveal(value: Any) -> Any:
    """The value with every secret wrapper removed (for reading; never for messages)."""
    if is_secret(value):
        return reveal(value.get("value"))
    if isinstance(value, Mapping):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [reveal(v) for v in value]
    return value


def known(value: Any) -> bool:
    """A value that is set and known (secret or not)."""
    value = reveal(value)
    return value is not None and not is_unknown(value)


def _strings(value: Any) -> Iterator[str]:
    """Every known string inside a value (secrets revealed)."""
    value = reveal(value)
    if isinstance(value, str):
        if not is_unknown(value):
            yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k != PROVIDER_KEY:
                yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _truthy(value: Any) -> bool | None:
    """True/False for a known boolean-ish value; None when unknown or unset."""
    value = reveal(value)
    if value is None or is_unknown(value):
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _number(value: Any) -> float | None:
    value = reveal(value)
    if value is None or is_unknown(value) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _fmt_days(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# --------------------------------------------------------------------------------------------
# Layer, owner and labels
# --------------------------------------------------------------------------------------------


def kind_of(resource_type: str) -> str:
    """A short, readable kind: ``docker:Container``, ``aws:BucketLifecycleConfiguration``, ``native:LocalService``."""
    if is_dynamic(resource_type):
        module = resource_type.split(":", 1)[1].split(":")[0]  # dynamic/native
        package = module.split("/", 1)[1] if "/" in module else "dynamic"
        return f"{package}:{resource_type.rsplit(':', 1)[-1]}"
    return f"{resource_type.split(':', 1)[0]}:{resource_type.rsplit(':', 1)[-1]}"


def urn_type_chain(urn: str) -> list[str]:
    """The qualified type of a URN as a list: parent types first, the resource's own type last."""
    parts = urn.split("::")
    return parts[2].split("$") if len(parts) >= 4 else []


def layer_component_of(urn: str) -> str | None:
    """The layer whose component the resource was built under, read from its URN."""
    for token in reversed(urn_type_chain(urn)[:-1]):
        if token.startswith(LAYER_COMPONENT_PREFIX):
            return token[len(LAYER_COMPONENT_PREFIX):].lower()
    return None


def _tags(value: Any) -> dict[str, str]:
    value = reveal(value)
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items() if v is not None and not is_unknown(v)}
    return {}


def labels_of(resource: Resource) -> dict[str, str]:
    """The labels (docker, native) or tags (aws, with the provider's default tags) of a resource."""
    props = resource.props
    if resource.type.startswith("docker:"):
        raw = reveal(props.get("labels"))
        if isinstance(raw, list):
            return {str(item.get("label")): str(item.get("value")) for item in raw
                    if isinstance(item, Mapping) and item.get("label") is not None}
        return _tags(raw)
    if resource.type.startswith("aws:"):
        merged: dict[str, str] = {}
        if resource.provider:
            default_tags = reveal(resource.provider.get("defaultTags"))
            if isinstance(default_tags, Mapping):
                merged.update(_tags(default_tags.get("tags")))
        merged.update(_tags(props.get("tags")))
        return merged
    return _tags(props.get("labels"))


@functools.lru_cache(maxsize=None)
def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@functools.lru_cache(maxsize=None)
def _sdk_declares_input(resource_type: str, input_name: str) -> bool | None:
    """Whether the provider SDK's resource class takes an input (read from its source, not imported)."""
    try:
        package, module, _ = resource_type.split(":")
        module_path, file_stem = module.split("/")
    except ValueError:
        return None
    package_dir = _package_dir({"aws": "pulumi_aws", "docker": "pulumi_docker"}.get(package, ""))
    if package_dir is None:
        return None
    folder = package_dir if module_path == "index" else package_dir / module_path.replace("/", "_")
    source = folder / f"{_snake(file_stem)}.py"
    if not source.exists():
        return None
    pattern = re.compile(rf"^\s+{input_name}: pulumi\.Input\[", re.M)
    return bool(pattern.search(source.read_text(encoding="utf-8")))


def can_carry_labels(resource: Resource) -> bool:
    """Whether the resource's type takes labels (docker) or tags (aws); native services always do."""
    if resource.type == LOCAL_SERVICE:
        return True
    if resource.type.startswith("docker:"):
        declared = _sdk_declares_input(resource.type, "labels")
        return declared if declared is not None else "labels" in resource.props
    if resource.type.startswith("aws:"):
        declared = _sdk_declares_input(resource.type, "tags")
        return declared if declared is not None else "tags" in resource.props
    return "labels" in resource.props


def is_exempt(resource: Resource) -> bool:
    """The stack, providers and the layer components themselves carry no labels."""
    t = resource.type
    return t == "pulumi:pulumi:Stack" or t.startswith("pulumi:providers:") or t.startswith(LAYER_COMPONENT_PREFIX)


def layer_of(resource: Resource, index: Mapping[str, Resource] | None = None) -> str | None:
    """The resource's layer: its label/tag, else the layer component it was built under."""
    label = labels_of(resource).get(LABEL_LAYER)
    if label:
        return label
    return structural_layer(resource, index)


def structural_layer(resource: Resource, index: Mapping[str, Resource] | None = None) -> str | None:
    """The layer component the resource sits under (URN type chain, else the parent chain)."""
    layer = layer_component_of(resource.urn)
    if layer:
        return layer
    seen = set()
    parent = resource.parent
    while index is not None and parent and parent not in seen:
        seen.add(parent)
        node = index.get(parent)
        if node is None:
            break
        if node.type.startswith(LAYER_COMPONENT_PREFIX):
            return node.type[len(LAYER_COMPONENT_PREFIX):].lower()
        parent = node.parent
    return None


def owner_of(resource: Resource, context: StackContext | None, index: Mapping[str, Resource] | None = None) -> str | None:
    labels = labels_of(resource)
    if labels.get(LABEL_OWNER):
        return labels[LABEL_OWNER]
    if context is not None:
        return context.owner_of(layer_of(resource, index), labels.get(LABEL_SERVICE))
    return None


def message(resource: Resource, rule: str, detail: str, context: StackContext | None,
            index: Mapping[str, Resource] | None = None) -> Violation:
    """``<kind> '<name>' (layer <layer>, owner <owner>) breaks <rule>: <detail>``."""
    layer = layer_of(resource, index) or "unknown"
    owner = owner_of(resource, context, index) or "unknown"
    return Violation(f"{kind_of(resource.type)} '{resource.name}' (layer {layer}, owner {owner}) breaks {rule}: {detail}",
                     resource.urn or None)


def _index(resources: Sequence[Resource]) -> dict[str, Resource]:
    return {r.urn: r for r in resources if r.urn}


def _service_label(resource: Resource) -> str | None:
    return labels_of(resource).get(LABEL_SERVICE)


# AWS tag values allow letters, digits, white space and _ . : / = + - @ only; the aws target drops the
# rest ("each engine's team" -> "each engines team"), so owners are compared in that form on aws.
_TAG_VALUE_DISALLOWED = re.compile(r"[^\w\s.:/=+\-@]", re.UNICODE)


def aws_tag_value(value: str) -> str:
    """A value as the aws target writes it into a tag (infra.targets.aws.common.tag_value)."""
    return " ".join(_TAG_VALUE_DISALLOWED.sub("", value).split())[:256]


def _same_value(resource: Resource, actual: str | None, expected: str) -> bool:
    if resource.type.startswith("aws:"):
        return actual is not None and aws_tag_value(actual) == aws_tag_value(expected)
    return actual == expected


def _no_context(rule: str, why: str) -> Violation:
    return Violation(
        f"stack (layer unknown, owner unknown) breaks {rule}: cannot check {why}: the stack's platform config "
        "(lakehouse:platform) did not reach the policy pack; run `pulumi preview --policy-pack policies` with a "
        "Pulumi CLI that passes stack config to policy packs, or add `--policy-pack-config` rendered by "
        "`python -m policies.config <stack>`"
    )


# --------------------------------------------------------------------------------------------
# Environment, files and containers
# --------------------------------------------------------------------------------------------

# An environment variable whose name says it holds a credential (POSTGRES_PASSWORD, S3_SECRET_KEY,
# AWS_SECRET_ACCESS_KEY, POLARIS_ROOT_SECRET, LAKEKEEPER__PG_ENCRYPTION_KEY, ...). *_FILE names a path.
CREDENTIAL_ENV_RE = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|ENCRYPTION_KEY|API_KEY)", re.I)
# A config-file key that holds a credential (password=, s3.aws-secret-key=, "secretKey":, oauth2.credential=).
CREDENTIAL_KEY_RE = re.compile(
    r"(password|passwd|secret|secret[-_.]?key|secret[-_.]?access[-_.]?key|credential|token|api[-_.]?key|"
    r"private[-_.]?key|encryption[-_.]?key)$",
    re.I,
)
URL_PASSWORD_RE = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:([^@\s/]+)@", re.I)
FILE_PAIR_RE = re.compile(r"""^\s*["']?([A-Za-z0-9_.\-]+)["']?\s*[:=]\s*["']?([^"'\n]*?)["']?\s*,?\s*$""", re.M)
# A value that refers to a credential held elsewhere (${ENV:X}, ${secret:x}, {{ x }}, $X).
REFERENCE_RE = re.compile(r"\$\{[^}]+\}|\{\{.*\}\}|^\$[A-Z_][A-Z0-9_]*$")
SQLITE_URI_RE = re.compile(r"jdbc:sqlite:[^\s\"',]*", re.I)


@dataclass
class EnvEntry:
    name: str
    value: Any  # str, or an unknown sentinel
    secret: bool


def _outer(raw: Any) -> tuple[Any, bool]:
    """``raw`` without a secret wrapper around the whole of it, and whether there was one."""
    whole = is_secret(raw)
    return (reveal(raw) if whole else raw), whole


def is_dynamic(resource_type: str) -> bool:
    """A Python dynamic resource: the native target's LocalService (or another of its kind)."""
    return resource_type.startswith("pulumi-python:dynamic")


def _split_env(entry: str) -> tuple[str, str]:
    name, _, value = entry.partition("=")
    return name, value


def env_entries(resource: Resource) -> list[EnvEntry]:
    """The environment of a docker container or native service, with each entry's secrecy."""
    props = resource.props
    entries: list[EnvEntry] = []
    if resource.type == DOCKER_CONTAINER:
        raw, whole_secret = _outer(props.get("envs"))
        if isinstance(raw, list):
            for item in raw:
                secret = whole_secret or is_secret(item)
                text = reveal(item)
                if isinstance(text, str) and not is_unknown(text):
                    name, value = _split_env(text)
                    entries.append(EnvEntry(name, value, secret))
    elif is_dynamic(resource.type):
        raw, whole_secret = _outer(props.get("env"))
        if isinstance(raw, Mapping):
            for name, value in raw.items():
                entries.append(EnvEntry(str(name), reveal(value), whole_secret or is_secret(value)))
    return entries


@dataclass
class ConfigFile:
    path: str
    content: str
    secret: bool


def config_files(resource: Resource) -> list[ConfigFile]:
    """Files a docker container gets uploaded or a native service gets written, with their secrecy."""
    props = resource.props
    files: list[ConfigFile] = []
    if resource.type == DOCKER_CONTAINER:
        raw, whole_secret = _outer(props.get("uploads"))
        if isinstance(raw, list):
            for item in raw:
                secret = whole_secret or is_secret(item)
                item = reveal(item) if is_secret(item) else item
                if not isinstance(item, Mapping):
                    continue
                content = item.get("content")
                secret = secret or is_secret(content)
                content = reveal(content)
                if isinstance(content, str) and not is_unknown(content):
                    files.append(ConfigFile(str(reveal(item.get("file"))), content, secret))
    elif resource.type == ECS_TASK_DEFINITION:
        for c in container_definitions(resource) or []:
            for arg in list(c.get("command") or []) + list(c.get("entryPoint") or []):
                files.extend(embedded_files(str(arg)))
    elif is_dynamic(resource.type):
        raw, whole_secret = _outer(props.get("files"))
        if isinstance(raw, Mapping):
            for path, content in raw.items():
                secret = whole_secret or is_secret(content)
                content = reveal(content)
                if isinstance(content, str) and not is_unknown(content):
                    files.append(ConfigFile(str(path), content, secret))
    return files


# Fargate has no host files: the aws target writes config files from the container command
# (`echo <base64> | base64 -d > <path>`, infra.targets.aws.ecs.files_then_exec).
EMBEDDED_FILE_RE = re.compile(r"echo\s+([A-Za-z0-9+/=]+)\s*\|\s*base64\s+-d\s*>\s*('[^']*'|\"[^\"]*\"|\S+)")


def embedded_files(command: str) -> list[ConfigFile]:
    """Config files a shell command writes from base64 (task definitions are stored in plain text)."""
    files = []
    for encoded, path in EMBEDDED_FILE_RE.findall(command):
        try:
            content = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            continue
        files.append(ConfigFile(path.strip("'\""), content, False))
    return files


def container_definitions(resource: Resource) -> list[dict[str, Any]] | None:
    """The containers of an ECS task definition (None while unknown)."""
    raw = reveal(resource.props.get("containerDefinitions"))
    if raw is None or is_unknown(raw):
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else None


def is_docker_job(resource: Resource) -> bool:
    """A container that runs once to completion (the docker target's jobs) rather than a server."""
    props = resource.props
    return _truthy(props.get("attach")) is True or reveal(props.get("restart")) == "no" or _truthy(props.get("mustRun")) is False


def _credential_pairs(content: str) -> Iterator[tuple[str, str]]:
    """(key, value) pairs of a properties/YAML/JSON file whose key names a credential and whose value is literal."""
    for match in FILE_PAIR_RE.finditer(content):
        key, value = match.group(1), match.group(2).strip()
        if not CREDENTIAL_KEY_RE.search(key) or not value:
            continue
        if REFERENCE_RE.search(value) or value.lower() in ("true", "false", "null", "none") or value in ("[", "{"):
            continue
        yield key, value


# --------------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImageRef:
    ref: str
    tag: str | None
    digest: str | None


def parse_image(ref: str) -> ImageRef:
    name, _, digest = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else None
    return ImageRef(ref, tag or None, digest or None)


def image_refs(resource: Resource) -> list[str]:
    """Image references a resource pulls (image ids such as sha256:... are not references)."""
    refs: list[str] = []
    if resource.type == DOCKER_REMOTE_IMAGE:
        refs.append(reveal(resource.props.get("name")))
    elif resource.type == DOCKER_CONTAINER:
        refs.append(reveal(resource.props.get("image")))
    elif resource.type == ECS_TASK_DEFINITION:
        refs.extend(reveal(c.get("image")) for c in container_definitions(resource) or [])
    return [r for r in refs if isinstance(r, str) and r and not is_unknown(r) and not r.startswith("sha256:")]


# ============================================================================================
# The rules
# ============================================================================================

# ---- ownership (stack) ----------------------------------------------------------------------


def check_layer_ownership(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """Every resource carries its layer and owner, and the owner is the one the ownership table names.

    Resources whose type takes labels/tags must carry ``lakehouse.layer`` and ``lakehouse.owner``
    (and ``lakehouse.platform``); the layer must be the one of the component the resource was
    built under; the owner must be the table's owner of the resource's service (a service may have
    its own owner, e.g. an engine team) or else of its layer, exactly as ``layer_labels`` labels
    them. A resource may name a service of another layer (an IAM task role of polaris lives in
    governance: governance answers who may do what); its owner is then that service's owner.
    Types that take no labels (images, bucket sub-resources, role policies) must sit under a layer
    component, from which they take both. AWS tag values drop characters AWS refuses (the aws
    target writes "each engines team"), so owners are compared in that form on aws.
    """
    rule = "layer-ownership"
    index = _index(resources)
    out: list[str] = []
    if context is None:
        out.append(_no_context(rule, "owners against the stack's ownership table"))
    for r in resources:
        if is_exempt(r):
            continue
        built_under = structural_layer(r, index)
        if not can_carry_labels(r):
            if built_under is None:
                out.append(message(r, rule, "takes no labels or tags and sits outside every layer component; "
                                            "create it with parent=<its layer's component> so it inherits "
                                            "the layer and its owner", context, index))
            continue
        labels = labels_of(r)
        word = "tag" if r.type.startswith("aws:") else "label"
        missing = [k for k in (LABEL_LAYER, LABEL_OWNER) if not labels.get(k)]
        if missing:
            out.append(message(r, rule, f"carries no {' and no '.join(missing)} {word}; every resource says which "
                                        "layer it belongs to and who answers for it (infra.layers.base.layer_labels)",
                               context, index))
            continue
        layer, owner, service = labels[LABEL_LAYER], labels[LABEL_OWNER], labels.get(LABEL_SERVICE)
        if layer not in LAYER_NAMES:
            out.append(message(r, rule, f"{word} {LABEL_LAYER}={layer!r} is not a layer; allowed: "
                                        f"{', '.join(LAYER_NAMES)}", context, index))
            continue
        if built_under and built_under != layer:
            out.append(message(r, rule, f"{word} {LABEL_LAYER}={layer!r} but it is built by the {built_under} "
                                        f"layer's component; label it {built_under} or move it", context, index))
        if context is None:
            continue
        expected = context.owner_of(layer, service)
        if expected is not None and not _same_value(r, owner, expected):
            whose = f"service {service}" if service and service in context.services else f"layer {layer}"
            out.append(message(r, rule, f"{word} {LABEL_OWNER}={owner!r} but the ownership table of stack "
                                        f"{context.stack} says {whose} is owned by {expected!r}", context, index))
        platform = labels.get(LABEL_PLATFORM)
        if context.platform and not _same_value(r, platform, context.platform):
            out.append(message(r, rule, f"{word} {LABEL_PLATFORM}={platform!r} but this stack's platform is "
                                        f"{context.platform!r}", context, index))
    return out


# ---- storage --------------------------------------------------------------------------------


def _rule_prefix(rule: Mapping[str, Any]) -> str | None:
    """The prefix a lifecycle rule is scoped to ('' for the whole bucket; None when unknown)."""
    candidates = []
    flt = reveal(rule.get("filter"))
    if isinstance(flt, Mapping):
        candidates.append(flt.get("prefix"))
        conj = flt.get("and")
        if isinstance(conj, Mapping):
            candidates.append(conj.get("prefix"))
    candidates.append(rule.get("prefix"))
    for value in candidates:
        if is_unknown(value):
            return None
        if isinstance(value, str) and value:
            return value.lstrip("/")
    return ""


def _expires_current(rule: Mapping[str, Any]) -> str | None:
    """How a rule expires current objects ('after N days', 'on <date>'), or None if it does not."""
    expiration = reveal(rule.get("expiration"))
    if isinstance(expiration, list):  # older schemas: a one-element list
        expiration = expiration[0] if expiration else None
    if not isinstance(expiration, Mapping):
        return None
    days, date = _number(expiration.get("days")), expiration.get("date")
    if days:
        return f"after {_fmt_days(days)} days"
    if isinstance(date, str) and date and not is_unknown(date):
        return f"on {date}"
    return None


def _describe_prefix(prefix: str) -> str:
    return f"'{prefix}'" + (" (the whole bucket)" if prefix == "" else "")


def check_lifecycle_keeps_warehouse(resource: Resource, context: StackContext | None) -> list[str]:
    """No lifecycle rule expires current objects under a warehouse prefix (aws).

    Only Iceberg's own maintenance (expire_snapshots, remove_orphan_files) may delete table files:
    a lifecycle rule that expires current objects deletes files the current snapshot still
    references. Expiring noncurrent versions and aborting multipart uploads is fine. Applies to
    every lifecycle configuration of the stack: its buckets are the warehouse and its replica.
    """
    rule_name = "storage-lifecycle-keeps-warehouse"
    if resource.type in S3_LIFECYCLE:
        rules = reveal(resource.props.get("rules"))
    elif resource.type in S3_BUCKETS:
        rules = reveal(resource.props.get("lifecycleRules"))
    else:
        return []
    if not isinstance(rules, list):
        return []
    prefixes = context.warehouse_prefixes if context is not None else ("",)
    out: list[str] = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            continue
        status = rule.get("status", "Enabled" if rule.get("enabled", True) is not False else "Disabled")
        if status == "Disabled":
            continue
        how = _expires_current(rule)
        prefix = _rule_prefix(rule)
        if how is None or prefix is None:
            continue
        clash = next((w.lstrip("/") for w in prefixes if prefix.startswith(w.lstrip("/")) or w.lstrip("/").startswith(prefix)), None)
        if clash is None:
            continue
        rule_id = rule.get("id") or f"#{i}"
        out.append(message(resource, rule_name,
                           f"lifecycle rule '{rule_id}' expires current objects {how} under prefix "
                           f"{_describe_prefix(prefix)}, which overlaps warehouse prefix {_describe_prefix(clash)}; "
                           "only Iceberg's maintenance may delete table files: scope the rule outside the "
                           "warehouse prefixes or expire noncurrent versions only", context))
    return out


def _refs_of(resource: Resource) -> set[str]:
    refs = {resource.name}
    for value in (resource.props.get("bucket"), resource.props.get("id"), resource.id):
        value = reveal(value)
        if isinstance(value, str) and value and not is_unknown(value):
            refs.add(value)
    return refs


def _attached(sub: Resource, buckets: Sequence[Resource]) -> list[Resource]:
    """The buckets an S3 sub-resource (versioning, encryption, public access block) configures."""
    if sub.deps.get("bucket"):
        linked = [b for b in buckets if b.urn in sub.deps["bucket"]]
        if linked:
            return linked
    target = reveal(sub.props.get("bucket"))
    if isinstance(target, str) and not is_unknown(target):
        return [b for b in buckets if target in _refs_of(b)]
    same_parent = [b for b in buckets if b.parent == sub.parent]
    return same_parent if len(same_parent) == 1 else []


def check_bucket_protected(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """Every bucket is versioned, encrypted with SSE-KMS and blocked from public access (aws)."""
    rule = "storage-bucket-protected"
    buckets = [r for r in resources if r.type in S3_BUCKETS]
    if not buckets:
        return []
    index = _index(resources)
    versioned: dict[str, bool | None] = {}
    encrypted: dict[str, str | None] = {}
    blocked: dict[str, list[str]] = {}
    account_block = None
    for r in resources:
        if r.type == S3_ACCOUNT_PUBLIC_ACCESS_BLOCK:
            account_block = [f for f in PUBLIC_ACCESS_FLAGS if _truthy(r.props.get(f)) is False or r.props.get(f) is None]
    for sub in resources:
        if sub.type in S3_VERSIONING:
            cfg = reveal(sub.props.get("versioningConfiguration")) or {}
            status = cfg.get("status") if isinstance(cfg, Mapping) else None
            for b in _attached(sub, buckets):
                versioned[b.urn or b.name] = None if is_unknown(status) else status == "Enabled"
        elif sub.type in S3_ENCRYPTION:
            algorithms = []
            for rule_cfg in reveal(sub.props.get("rules")) or []:
                default = rule_cfg.get("applyServerSideEncryptionByDefault") if isinstance(rule_cfg, Mapping) else None
                if isinstance(default, Mapping):
                    algorithms.append(default.get("sseAlgorithm"))
            algorithm = next((a for a in algorithms if a in KMS_ALGORITHMS or is_unknown(a)), algorithms[0] if algorithms else None)
            for b in _attached(sub, buckets):
                encrypted[b.urn or b.name] = "unknown" if is_unknown(algorithm) else algorithm
        elif sub.type == S3_PUBLIC_ACCESS_BLOCK:
            off = [f for f in PUBLIC_ACCESS_FLAGS if _truthy(sub.props.get(f)) is False or sub.props.get(f) is None]
            for b in _attached(sub, buckets):
                blocked[b.urn or b.name] = off
    out: list[str] = []
    for b in buckets:
        key = b.urn or b.name
        problems = []
        inline_versioning = reveal(b.props.get("versioning"))
        inline_on = isinstance(inline_versioning, Mapping) and _truthy(inline_versioning.get("enabled")) is True
        if versioned.get(key) is False or (key not in versioned and not inline_on):
            problems.append("is not versioned (no BucketVersioning with status Enabled): an overwritten or deleted "
                            "metadata file could not be recovered")
        algorithm = encrypted.get(key)
        if key not in encrypted:
            inline = reveal(b.props.get("serverSideEncryptionConfiguration"))
            try:
                algorithm = inline["rule"]["applyServerSideEncryptionByDefault"]["sseAlgorithm"]  # type: ignore[index]
            except (TypeError, KeyError):
                algorithm = None
        if algorithm is None:
            problems.append("is not encrypted with SSE-KMS (no server-side encryption configuration)")
        elif algorithm not in KMS_ALGORITHMS and algorithm != "unknown" and not is_unknown(algorithm):
            problems.append(f"is not encrypted with SSE-KMS (sse_algorithm is {algorithm!r}; use 'aws:kms')")
        off = blocked.get(key)
        if off is None and account_block is not None:
            off = account_block
        if off is None:
            problems.append("has no public access block (all four of block_public_acls, block_public_policy, "
                            "ignore_public_acls, restrict_public_buckets must be true)")
        elif off:
            problems.append(f"is not blocked from public access ({', '.join(_snake(f) for f in off)} not true)")
        acl = reveal(b.props.get("acl"))
        if isinstance(acl, str) and acl.startswith("public"):
            problems.append(f"has a public ACL ({acl})")
        for p in problems:
            out.append(message(b, rule, f"bucket {p}", context, index))
    return out


def _mount_targets(resource: Resource) -> list[tuple[str, str, str]]:
    """(type, source, target) of every mount and volume of a docker container."""
    mounts = []
    for m in reveal(resource.props.get("mounts")) or []:
        if isinstance(m, Mapping):
            mounts.append((str(m.get("type") or "volume"), str(m.get("source") or ""), str(m.get("target") or "")))
    for v in reveal(resource.props.get("volumes")) or []:
        if isinstance(v, Mapping):
            kind = "bind" if v.get("hostPath") else "volume"
            mounts.append((kind, str(v.get("hostPath") or v.get("volumeName") or ""), str(v.get("containerPath") or "")))
    return mounts


def _covering_mount(resource: Resource, path: str) -> tuple[str, str, str] | None:
    """The mount that holds ``path`` (the deepest whose target is the path or one of its parents)."""
    path = posixpath.normpath(path)
    best = None
    for mount in _mount_targets(resource):
        target = posixpath.normpath(mount[2]) if mount[2] else ""
        if target and (path == target or path.startswith(target.rstrip("/") + "/")):
            if best is None or len(target) > len(best[2]):
                best = mount
    return best


def _is_store(resource: Resource) -> bool:
    if _service_label(resource) == STORE_SERVICE:
        return True
    command = reveal(resource.props.get("command")) or []
    return bool(command) and command[0] == "server" and any(str(a).startswith("-dir=") for a in command)


def check_store_persistent(resource: Resource, context: StackContext | None) -> list[str]:
    """The lab's object store keeps its data on a named volume or bind mount (docker)."""
    if resource.type != DOCKER_CONTAINER or is_docker_job(resource) or not _is_store(resource):
        return []
    command = reveal(resource.props.get("command")) or []
    if is_unknown(command):
        return []
    data_dir = next((str(a).split("=", 1)[1] for a in command if str(a).startswith("-dir=")), "/data")
    mount = _covering_mount(resource, data_dir)
    if mount and mount[0] in ("volume", "bind") and mount[1]:
        return []
    return [message(resource, "storage-persistent-volume",
                    f"the object store's data directory {data_dir} is not on a named volume or bind mount: "
                    "every byte of every table would live in the container's writable layer and be lost with it; "
                    f"mount a named volume at {data_dir}", context)]


# ---- catalog --------------------------------------------------------------------------------


def _is_memory_sqlite(uri: str) -> bool:
    lowered = uri.lower()
    return lowered.startswith("jdbc:sqlite:") and ("mode=memory" in lowered or ":memory:" in lowered)


def check_no_memory_sqlite(resource: Resource, context: StackContext | None) -> list[str]:
    """No catalog on an in-memory SQLite database, on any target.

    Each pooled connection to an in-memory SQLite database gets its own empty copy, so the second
    connection fails with ``no such table: iceberg_tables`` and every restart loses every table.
    """
    rule = "catalog-no-in-memory-sqlite"
    found: list[str] = []
    for entry in env_entries(resource):
        if isinstance(entry.value, str) and _is_memory_sqlite(entry.value):
            found.append(f"{entry.name}={entry.value}")
    for f in config_files(resource):
        found.extend(f"{m} in {f.path}" for m in SQLITE_URI_RE.findall(f.content) if _is_memory_sqlite(m))
    if resource.type == ECS_TASK_DEFINITION:
        for c in container_definitions(resource) or []:
            for e in c.get("environment") or []:
                value = str(e.get("value", ""))
                if _is_memory_sqlite(value):
                    found.append(f"{e.get('name')}={value}")
    if not found:
        found.extend(m for s in _strings(resource.props) for m in SQLITE_URI_RE.findall(s) if _is_memory_sqlite(m))
    return [message(resource, rule,
                    f"{what} is an in-memory SQLite database: each pooled connection gets its own empty copy "
                    "(no such table: iceberg_tables) and a restart loses every table; use a file, e.g. "
                    "jdbc:sqlite:file:/catalog/fixture.db", context)
            for what in dict.fromkeys(found)]


def _sqlite_file(uri: str) -> str | None:
    """The file path of a file-backed SQLite JDBC URI."""
    rest = uri[len("jdbc:sqlite:"):]
    rest = rest.split("?", 1)[0]
    if rest.startswith("file:"):
        rest = rest[len("file:"):]
    return rest or None


def _is_root(user: Any) -> bool:
    user = reveal(user)
    if user is None or is_unknown(user):
        return False
    return str(user).split(":", 1)[0] in ("0", "root")


def check_catalog_persistent(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """The catalog database survives its process: a writable mount, a file under the data dir, or RDS backups.

    * docker: a container whose CATALOG_URI is a SQLite file has that file's directory on a mount;
      a bind mount needs a non-root container user and an init job (a container that mounts the
      same host path and chowns it to that user), or SQLite cannot create its file (SQLITE_CANTOPEN).
    * native: the SQLite file lies under the service's data_dir (kept when the stack is destroyed).
    * aws: every RDS instance/cluster keeps automated backups (backup_retention_period > 0).
    """
    rule = "catalog-database-persistent"
    index = _index(resources)
    out: list[str] = []
    containers = [r for r in resources if r.type == DOCKER_CONTAINER]
    for r in resources:
        uris = [e.value for e in env_entries(r) if e.name == "CATALOG_URI" and isinstance(e.value, str)]
        uris = [u for u in uris if u.lower().startswith("jdbc:sqlite:") and not _is_memory_sqlite(u)]
        for uri in uris:
            path = _sqlite_file(uri)
            if not path:
                continue
            directory = posixpath.dirname(path) or "/"
            if r.type == DOCKER_CONTAINER:
                mount = _covering_mount(r, directory)
                if mount is None:
                    out.append(message(r, rule, f"the catalog database {path} is on no mount: it lives in the "
                                                f"container's writable layer and is lost with it; bind-mount {directory}",
                                       context, index))
                    continue
                if mount[0] != "bind":
                    continue
                user = reveal(r.props.get("user"))
                if user is None:
                    out.append(message(r, rule, f"the catalog database's bind mount {directory} is written by the "
                                                "image's default user, which the init job cannot know; set the "
                                                "container user (the image's non-root uid:gid)", context, index))
                    continue
                if _is_root(user):
                    out.append(message(r, rule, f"the catalog runs as root ({user}); run it as the image's non-root "
                                                "user and let an init job hand it the bind mount", context, index))
                    continue
                if is_unknown(user):
                    continue
                uid = str(user).split(":", 1)[0]
                init = [
                    c for c in containers
                    if c is not r and is_docker_job(c)
                    and any(m[0] == "bind" and m[1] == mount[1] for m in _mount_targets(c))
                    and "chown" in " ".join(str(a) for a in reveal(c.props.get("command")) or [])
                    and uid in " ".join(str(a) for a in reveal(c.props.get("command")) or [])
                ]
                if not init:
                    out.append(message(r, rule, f"nothing hands the bind mount {mount[1]} (at {directory}) to the "
                                                f"catalog's user {user}: add an init job that mounts it and runs "
                                                f"chown {user}, or SQLite fails with SQLITE_CANTOPEN", context, index))
            elif is_dynamic(r.type):
                data_dir = reveal(r.props.get("data_dir"))
                if isinstance(data_dir, str) and not is_unknown(data_dir):
                    root = posixpath.normpath(data_dir)
                    if not posixpath.normpath(path).startswith(root.rstrip("/") + "/"):
                        out.append(message(r, rule, f"the catalog database {path} lies outside the service's data_dir "
                                                    f"{data_dir}, the only directory kept when the service is "
                                                    "replaced or the stack destroyed", context, index))
    for r in resources:
        if r.type not in (RDS_INSTANCE, RDS_CLUSTER) or known(r.props.get("replicateSourceDb")):
            continue
        days = _number(r.props.get("backupRetentionPeriod"))
        if days is None and is_unknown(reveal(r.props.get("backupRetentionPeriod"))):
            continue
        if not days:
            out.append(message(r, rule, "the catalog database keeps no automated backups (backup_retention_period "
                                        f"is {_fmt_days(days) if days is not None else 'not set'}); set it above 0",
                               context, index))
    return out


def check_rest_fixture_lab_only(resource: Resource, context: StackContext | None) -> list[str]:
    """The REST fixture (a test server, SQLite behind it) runs only on lab and native, never on aws."""
    if not resource.type.startswith("aws:"):
        return []
    service = _service_label(resource)
    mentions = [s for s in _strings(resource.props) if REST_FIXTURE_IMAGE in s or "jdbc:sqlite:" in s.lower()]
    if service in REST_FIXTURE_SERVICES or mentions:
        what = f"runs the REST fixture ({service or REST_FIXTURE_IMAGE})" if (
            service in REST_FIXTURE_SERVICES or any(REST_FIXTURE_IMAGE in s for s in mentions)) \
            else "puts a catalog on SQLite"
        return [message(resource, "catalog-rest-fixture-lab-only",
                        f"{what} on aws: the fixture is a test server with SQLite behind it, allowed on lab "
                        "and native only; use polaris or lakekeeper on RDS", context)]
    return []


# ---- images and artifacts -------------------------------------------------------------------


def check_image_pinned(resource: Resource, context: StackContext | None) -> list[str]:
    """Every image has an explicit version tag, never ``latest``."""
    out = []
    for ref in image_refs(resource):
        image = parse_image(ref)
        if image.tag is None:
            out.append(message(resource, "image-pinned", f"image {ref!r} has no tag; pin a version such as "
                                                         f"{ref.partition('@')[0]}:1.2.3", context))
        elif image.tag == "latest":
            out.append(message(resource, "image-pinned", f"image {ref!r} uses 'latest', which moves under you; "
                                                         "pin an explicit version tag", context))
    return out


def check_image_digest(resource: Resource, context: StackContext | None) -> list[str]:
    """Advice: pin images by digest as well, so a re-pushed tag cannot change what runs."""
    return [message(resource, "image-digest-advised",
                    f"image {ref!r} is pinned by tag only; add its digest ({ref}@sha256:...) so a re-pushed tag "
                    "cannot change what runs", context)
            for ref in image_refs(resource) if parse_image(ref).digest is None and parse_image(ref).tag not in (None, "latest")]


# ---- resources: memory and health -----------------------------------------------------------


def check_memory_limit(resource: Resource, context: StackContext | None) -> list[str]:
    """Every container (docker) and ECS task has a memory limit; every native service a memory budget.

    A local process cannot be capped like a container; the native target records the budget
    (``memory_budget_bytes``) that the resident-memory probe holds it to, and sizes its heap below it.
    """
    rule = "memory-limit"
    if resource.type == LOCAL_SERVICE:
        budget = reveal(resource.props.get("memory_budget_bytes"))
        if is_unknown(budget) or _number(budget):
            return []
        return [message(resource, rule, "local service declares no memory budget (memory_budget_bytes); the "
                                        "resident-memory probe has nothing to hold it to", context)]
    if resource.type == DOCKER_CONTAINER:
        memory = reveal(resource.props.get("memory"))
        if is_unknown(memory):
            return []
        if not _number(memory):
            return [message(resource, rule, "container has no memory limit (memory); one runaway JVM takes the "
                                            "whole host down: set the service's memory budget", context)]
    elif resource.type == ECS_TASK_DEFINITION:
        if known(resource.props.get("memory")) and _number(resource.props.get("memory")) != 0:
            return []
        if is_unknown(reveal(resource.props.get("memory"))):
            return []
        containers = container_definitions(resource)
        if containers is None:
            return []
        bare = [str(c.get("name")) for c in containers if not c.get("memory")]
        if bare:
            return [message(resource, rule, f"task has no task-level memory and container(s) {', '.join(bare)} "
                                            "have no memory limit", context)]
    return []


def _healthcheck_tests(value: Any) -> list[str] | None:
    value = reveal(value)
    if not isinstance(value, Mapping):
        return None
    tests = value.get("tests")
    if is_unknown(tests):
        return ["unknown"]
    return [str(t) for t in tests] if isinstance(tests, list) else None


def _linked(service: Resource, candidates: Sequence[Resource], prop: str, keys: Callable[[Resource], set[str]]) -> list[Resource]:
    """Resources a service refers to through ``prop``: by dependency, by value, else by service tag."""
    if service.deps.get(prop):
        linked = [c for c in candidates if c.urn in service.deps[prop]]
        if linked:
            return linked
    values = reveal(service.props.get(prop))
    values = values if isinstance(values, list) else [values]
    wanted = [v for v in values if isinstance(v, str) and v and not is_unknown(v)]
    linked = [c for c in candidates if any(_refers_to(v, keys(c)) for v in wanted)]
    if linked:
        return linked
    tag = _service_label(service)
    return [c for c in candidates if tag and _service_label(c) == tag]


def _refers_to(value: str, keys: set[str]) -> bool:
    """Whether a reference (a name, a family, an ARN such as ...:task-definition/<family>:<rev>) names one of keys."""
    for key in keys:
        if value == key or value.endswith(":" + key) or value.endswith("/" + key) or f"/{key}:" in value:
            return True
    return False


def _task_keys(td: Resource) -> set[str]:
    family = reveal(td.props.get("family"))
    keys = {td.name}
    for value in (family, reveal(td.props.get("arn")), td.id):
        if isinstance(value, str) and not is_unknown(value):
            keys.add(value)
    return keys


def check_health_check(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """Every service has a health check: docker healthcheck, native ``health``, ECS container or target group check.

    Jobs (containers that run once: restart "no") need none. An ECS service is covered by the
    health checks of its task definition's essential containers, or by a load balancer target
    group whose health check is not disabled.
    """
    rule = "service-health-check"
    index = _index(resources)
    out: list[str] = []
    task_defs = [r for r in resources if r.type == ECS_TASK_DEFINITION]
    for r in resources:
        if r.type == DOCKER_CONTAINER and not is_docker_job(r):
            tests = _healthcheck_tests(r.props.get("healthcheck"))
            if not tests or tests[0].upper() == "NONE":
                out.append(message(r, rule, "server container has no health check (healthcheck); nothing can tell "
                                            "a started service from a ready one", context, index))
        elif is_dynamic(r.type) and "health" in r.props:
            health = reveal(r.props.get("health"))
            if not is_unknown(health) and not (isinstance(health, Mapping) and health.get("kind")):
                out.append(message(r, rule, "local service has no health check (health with kind http, tcp or "
                                            "command)", context, index))
        elif r.type == LB_TARGET_GROUP:
            check = reveal(r.props.get("healthCheck"))
            if isinstance(check, Mapping) and _truthy(check.get("enabled")) is False:
                out.append(message(r, rule, "target group's health check is disabled", context, index))
        elif r.type == ECS_SERVICE:
            lbs = reveal(r.props.get("loadBalancers")) or []
            if isinstance(lbs, list) and lbs:
                continue  # the target group's health check (enabled unless disabled, checked above)
            tds = _linked(r, task_defs, "taskDefinition", _task_keys)
            if not tds:
                out.append(message(r, rule, "ECS service has no load balancer and its task definition was not found; "
                                            "give its containers a healthCheck", context, index))
                continue
            for td in tds:
                containers = container_definitions(td)
                if containers is None:
                    continue
                bare = [str(c.get("name")) for c in containers if c.get("essential", True) and not c.get("healthCheck")]
                if bare:
                    out.append(message(r, rule, f"ECS service has no load balancer and container(s) {', '.join(bare)} "
                                                f"of task definition '{td.name}' have no healthCheck", context, index))
    return out


# ---- secrets --------------------------------------------------------------------------------


def check_secrets_not_plaintext(resource: Resource, context: StackContext | None) -> list[str]:
    """No credential in plain text in an environment variable or config file: secrets only.

    A credential-named variable (``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``AWS_SECRET_ACCESS_KEY``,
    ...) or a URL with an embedded password must be a Pulumi secret (encrypted in state, masked in
    output); in an ECS task it goes in ``secrets`` (valueFrom), never ``environment``, because the
    task definition is stored and shown in plain text. Values are never printed.
    """
    rule = "secrets-not-plaintext"
    out: list[str] = []
    for entry in env_entries(resource):
        if entry.secret or not isinstance(entry.value, str) or not entry.value or is_unknown(entry.value):
            continue
        if CREDENTIAL_ENV_RE.search(entry.name) and not entry.name.upper().endswith("_FILE"):
            out.append(message(resource, rule, f"environment variable {entry.name} holds a credential in plain text; "
                                               "make the value a Pulumi secret (config --secret or "
                                               "pulumi.Output.secret)", context))
        elif URL_PASSWORD_RE.search(entry.value) and not REFERENCE_RE.search(URL_PASSWORD_RE.search(entry.value).group(1)):
            out.append(message(resource, rule, f"environment variable {entry.name} holds a URL with a password in "
                                               "plain text; make the value a Pulumi secret", context))
    for f in config_files(resource):
        if f.secret:
            continue
        keys = list(dict.fromkeys(key for key, _ in _credential_pairs(f.content)))
        if keys:
            out.append(message(resource, rule, f"config file {f.path} holds credential(s) in plain text "
                                               f"({', '.join(keys)}); make the file content a Pulumi secret or read "
                                               "the value from the environment (${ENV:...})", context))
    if resource.type == ECS_TASK_DEFINITION:
        for c in container_definitions(resource) or []:
            for e in c.get("environment") or []:
                name = str(e.get("name", ""))
                if CREDENTIAL_ENV_RE.search(name) and not name.upper().endswith("_FILE"):
                    out.append(message(resource, rule, f"container {c.get('name')} passes {name} in environment; "
                                                       "credentials go in secrets (valueFrom Secrets Manager or SSM)",
                                       context))
    if resource.type in (RDS_INSTANCE, RDS_CLUSTER):
        for prop in ("password", "masterPassword"):
            value = resource.props.get(prop)
            if value is not None and not is_secret(value) and not is_unknown(value) and value != "":
                out.append(message(resource, rule, f"{prop} is set in plain text; use a Pulumi secret or "
                                                   "manage_master_user_password", context))
    return out


# ---- governance -----------------------------------------------------------------------------


def check_vended_credentials(resource: Resource, context: StackContext | None) -> list[str]:
    """On aws, engines get credentials from the catalog's vending role, never static keys."""
    rule = "governance-vended-credentials"
    if not resource.type.startswith("aws:"):
        return []
    out: list[str] = []
    if resource.type == IAM_ACCESS_KEY:
        user = reveal(resource.props.get("user"))
        out.append(message(resource, rule, f"creates a static access key{f' for IAM user {user}' if isinstance(user, str) and not is_unknown(user) else ''}; "
                                           "engines get short-lived credentials from the catalog's vending role "
                                           "(task roles and vended credentials), never long-lived keys", context))
    texts = [*_strings(resource.props), *(f.content for f in config_files(resource))]
    keys = sorted({k for s in texts for k in ("s3.aws-access-key", "s3.aws-secret-key") if k in s})
    if keys:
        out.append(message(resource, rule, f"a Trino catalog file sets {', '.join(keys)}; on aws Trino reads S3 "
                                           "with credentials vended by the catalog (vended-credentials-enabled=true) "
                                           "or its task role", context))
    if resource.type == ECS_TASK_DEFINITION:
        for c in container_definitions(resource) or []:
            names = [str(e.get("name")) for e in (c.get("environment") or []) + (c.get("secrets") or [])
                     if str(e.get("name")) in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]
            if names:
                out.append(message(resource, rule, f"container {c.get('name')} is given static AWS keys "
                                                   f"({', '.join(names)}); use the task role", context))
    return out


# ---- recovery -------------------------------------------------------------------------------


def check_backup_retention(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """The catalog database keeps backups at least as long as the recovery layer promises (aws).

    Satisfied by the RDS automated backups (backup_retention_period) or by an AWS Backup plan
    rule whose lifecycle keeps recovery points at least that many days.
    """
    rule = "recovery-backup-retention"
    databases = [r for r in resources if r.type in (RDS_INSTANCE, RDS_CLUSTER) and not known(r.props.get("replicateSourceDb"))]
    if not databases:
        return []
    if context is None:
        return [_no_context(rule, "backup retention against the recovery layer's promise")]
    index = _index(resources)
    promise = context.backup_retention_days
    plan_days: list[float] = []
    plan_unknown = False
    for r in resources:
        if r.type != BACKUP_PLAN:
            continue
        for plan_rule in reveal(r.props.get("rules")) or []:
            lifecycle = plan_rule.get("lifecycle") if isinstance(plan_rule, Mapping) else None
            if isinstance(lifecycle, Mapping):
                days = _number(lifecycle.get("deleteAfter"))
                if days is None and is_unknown(lifecycle.get("deleteAfter")):
                    plan_unknown = True
                elif days is None:
                    plan_days.append(float("inf"))  # kept until deleted by hand
                else:
                    plan_days.append(days)
    best_plan = max(plan_days, default=None)
    out: list[str] = []
    if plan_unknown or (best_plan is not None and best_plan >= promise):
        return out
    recovery_owner = context.layer_owners.get("recovery", "unknown")
    for db in databases:
        raw = reveal(db.props.get("backupRetentionPeriod"))
        if is_unknown(raw):
            continue
        days = _number(raw) or 0
        if days >= promise:
            continue
        plan = (f"no AWS Backup plan keeps them that long (longest delete_after: {_fmt_days(best_plan)} days)"
                if best_plan is not None else "no AWS Backup plan covers it")
        out.append(message(db, rule, f"the catalog database keeps backups {_fmt_days(days)} days "
                                     f"(backup_retention_period) and {plan}; the recovery layer (owner "
                                     f"{recovery_owner}) promises {promise} days "
                                     f"(recovery.backup_retention_days)", context, index))
    return out


# ============================================================================================
# The pack's contents
# ============================================================================================

POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("layer-ownership", "Every resource carries its layer and owner, and the owner is the one the stack's "
              "ownership table names.", "stack", check_layer_ownership, needs_context=True),
    PolicyDef("storage-lifecycle-keeps-warehouse", "No lifecycle rule expires current objects under a warehouse "
              "prefix; only Iceberg's maintenance deletes table files.", "resource", check_lifecycle_keeps_warehouse,
              needs_context=True),
    PolicyDef("storage-bucket-protected", "Every bucket is versioned, encrypted with SSE-KMS and blocked from "
              "public access.", "stack", check_bucket_protected),
    PolicyDef("storage-persistent-volume", "The object store keeps its data on a named volume or bind mount.",
              "resource", check_store_persistent),
    PolicyDef("catalog-no-in-memory-sqlite", "No catalog on an in-memory SQLite database, on any target.",
              "resource", check_no_memory_sqlite),
    PolicyDef("catalog-database-persistent", "The catalog database survives its process: a writable mount, a file "
              "under the data dir, or RDS with automated backups.", "stack", check_catalog_persistent),
    PolicyDef("catalog-rest-fixture-lab-only", "The REST fixture runs on lab and native only.", "resource",
              check_rest_fixture_lab_only),
    PolicyDef("image-pinned", "Every image has an explicit version tag, never latest.", "resource", check_image_pinned),
    PolicyDef("image-digest-advised", "Images are best pinned by digest as well as tag.", "resource",
              check_image_digest, level="advisory"),
    PolicyDef("memory-limit", "Every container and ECS task has a memory limit; every native service a memory "
              "budget.", "resource", check_memory_limit),
    PolicyDef("service-health-check", "Every service has a health check.", "stack", check_health_check),
    PolicyDef("secrets-not-plaintext", "No credential in plain text in an environment variable or config file.",
              "resource", check_secrets_not_plaintext),
    PolicyDef("governance-vended-credentials", "On aws, engines get credentials from the catalog's vending role, "
              "never static keys.", "resource", check_vended_credentials),
    PolicyDef("recovery-backup-retention", "The catalog database keeps backups at least as long as the recovery "
              "layer promises.", "stack", check_backup_retention, needs_context=True),
)
POLICY_NAMES: tuple[str, ...] = tuple(p.name for p in POLICIES)
LEVELS = ("advisory", "mandatory", "disabled")


def policy(name: str) -> PolicyDef:
    """The rule of that name."""
    for p in POLICIES:
        if p.name == name:
            return p
    raise KeyError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}")


def run_policy(p: PolicyDef, resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """All violations of one rule over a stack's resources."""
    if p.scope == "stack":
        return list(p.check(resources, context))
    out: list[str] = []
    for r in resources:
        out.extend(p.check(r, context))
    return out


def validate_all(resources: Sequence[Resource], context: StackContext | None,
                 policies: Iterable[PolicyDef] = POLICIES) -> dict[str, list[str]]:
    """policy name -> violations, for every rule."""
    return {p.name: run_policy(p, resources, context) for p in policies}
