"""The cloud runbook's steps that can run without an account, run as written on its page (docs/targets/cloud.md).

Every ``bash`` block of the page whose first line is ``# runbook: <step>`` is taken from the page and run by bash,
with the project's Pulumi CLI and the AWS CLI, against moto in server mode (plain HTTP on a loopback port; the CLIs
reach it through ``AWS_ENDPOINT_URL``, which the Go SDK the Pulumi CLI is built with honours, so the page's URLs
are used as written). The page's settings are the test's own: a fresh bucket, key alias and stack name. Step 5's
lines are generated (``lakehouse_platform.reference.secret_commands``, what the page renders) and run the same way.

Toolchain tier (``make test``): needs ``.tools/bin/pulumi`` (``make pulumi``) and moto's server, both started and
stopped here; a throwaway ``PULUMI_HOME`` and project directory, so nothing of the checkout is touched.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from lakehouse_platform.reference import secret_commands
from tests.support import REPO_ROOT
from tests.support.aws_emulator import MotoServer, moto_server
from tests.support.stacks import spec_of

pytestmark = pytest.mark.toolchain

RUNBOOK = REPO_ROOT / "docs" / "targets" / "cloud.md"
REGION = "eu-west-1"
PROJECT = "lakehouse-platform"
SETTINGS = {"AWS_REGION": REGION, "STATE_BUCKET": "runbook-state", "STATE_KEY": "alias/runbook-pulumi",
            "STACK": "cloud"}
BACKEND = f"s3://{SETTINGS['STATE_BUCKET']}/lakehouse?region={REGION}"
STATE = f"lakehouse/.pulumi/stacks/{PROJECT}/{SETTINGS['STACK']}.json"
LOCKS = f"lakehouse/.pulumi/locks/organization/{PROJECT}/{SETTINGS['STACK']}/"


def runbook_steps(text: str) -> dict[str, str]:
    """step -> script, for each ```bash block of the page whose first line is ``# runbook: <step>``."""
    steps = {}
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        first, _, rest = block.partition("\n")
        if match := re.fullmatch(r"# runbook: ([a-z-]+)", first.strip()):
            steps[match.group(1)] = rest
    return steps


STEPS = runbook_steps(RUNBOOK.read_text())


@pytest.fixture(scope="module")
def pulumi_bin() -> Path:
    binary = REPO_ROOT / ".tools" / "bin" / "pulumi"
    if not binary.exists():
        pytest.skip("the project-local Pulumi CLI (.tools/bin/pulumi, make pulumi) is not built")
    return binary


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_server(tmp_path_factory.mktemp("moto-runbook"), tls=False) as running:
        yield running


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project's Pulumi.yaml and the committed Pulumi.cloud.yaml: what the page's commands run in."""
    where = tmp_path_factory.mktemp("project")
    for name in ("Pulumi.yaml", "Pulumi.cloud.yaml"):
        shutil.copy2(REPO_ROOT / name, where / name)
    return where


@pytest.fixture(scope="module")
def env(server: MotoServer, pulumi_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The deploying shell after ``. scripts/pulumi-env.sh``, its PULUMI_HOME a throwaway one, AWS being moto."""
    from lakehouse_platform.control.workspace import pulumi_env

    shell = {**pulumi_env(), **server.client_env(REGION), **SETTINGS,
             "PULUMI_HOME": str(tmp_path_factory.mktemp("pulumi-home")),
             "PATH": f"{pulumi_bin.parent}:{REPO_ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
             "HOME": os.environ.get("HOME", "/root")}
    for name in ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"):  # the key, never a passphrase
        shell.pop(name, None)
    return shell


def run(script: str, env: dict[str, str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=180, check=False)
    if check:
        assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done


def logged_in(script: str) -> str:
    """A step as the shell runs it after step 3's login (its PULUMI_BACKEND_URL export)."""
    return STEPS["state-login"] + script


def client(service: str, server: MotoServer) -> Any:
    """A boto3 client of moto's, as the test's own (the scripts get theirs from the environment)."""
    return boto3.client(service, region_name=REGION, endpoint_url=server.endpoint, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def keys(server: MotoServer) -> list[str]:
    s3 = client("s3", server)
    listed = s3.list_objects_v2(Bucket=SETTINGS["STATE_BUCKET"])
    return sorted(o["Key"] for o in listed.get("Contents", []))


def test_the_page_marks_the_steps_this_test_runs() -> None:
    assert list(STEPS) == ["state-key", "state-bucket", "state-login", "stack-init", "cancel-lock", "stack-rm"]
    assert "<!-- generated: cloud-secrets -->" in RUNBOOK.read_text()


def test_state_backend_secrets_provider_and_secrets_as_the_runbook_says(
        env: dict[str, str], project: Path, server: MotoServer) -> None:
    # 3. The key, the bucket, the login.
    run(STEPS["state-key"] + STEPS["state-bucket"] + STEPS["state-login"], env, project)
    kms = client("kms", server)
    key = kms.describe_key(KeyId=SETTINGS["STATE_KEY"])["KeyMetadata"]
    assert kms.get_key_rotation_status(KeyId=key["KeyId"])["KeyRotationEnabled"] is True
    s3 = client("s3", server)
    assert s3.get_bucket_versioning(Bucket=SETTINGS["STATE_BUCKET"])["Status"] == "Enabled"
    rule = s3.get_bucket_encryption(Bucket=SETTINGS["STATE_BUCKET"])["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms",
                                                          "KMSMasterKeyID": SETTINGS["STATE_KEY"]}
    credentials = json.loads((Path(env["PULUMI_HOME"]) / "credentials.json").read_text())
    assert credentials["current"] == BACKEND

    # 4. The stack, its secrets provider the key: its data key decrypts with that key in KMS.
    run(logged_in(STEPS["stack-init"]), env, project)
    stack_file = yaml.safe_load((project / "Pulumi.cloud.yaml").read_text())
    assert stack_file["secretsprovider"] == f"awskms://{SETTINGS['STATE_KEY']}?region={REGION}"
    assert kms.decrypt(CiphertextBlob=base64.b64decode(stack_file["encryptedkey"]))["KeyId"] == key["Arn"]
    assert stack_file["config"]["lakehouse:platform"] == yaml.safe_load(
        (REPO_ROOT / "Pulumi.cloud.yaml").read_text())["config"]["lakehouse:platform"]  # the committed config kept
    assert "lakehouse/.pulumi/meta.yaml" in keys(server) and STATE in keys(server)  # the state object in the bucket

    # 5. The generated secret lines, as the page renders them, each read back; only ciphertext in the file.
    stack = spec_of("cloud")
    lines = secret_commands(stack, SETTINGS["STACK"])
    # Polaris's root and token key, Trino's shared secret, and per identity its own Polaris client and Trino password.
    per_identity = {f"lakehouse:{prefix}{name.capitalize()}" for name in stack.identities
                    for prefix in ("polarisClientSecret", "trinoPassword")}
    assert {line.split()[4] for line in lines} == {
        "lakehouse:polarisRootSecret", "lakehouse:polarisTokenKey", "lakehouse:trinoSharedSecret", *per_identity}
    assert len(lines) == 3 + len(per_identity)
    run(logged_in("\n".join(lines) + "\n"), env, project)
    stack_text = (project / "Pulumi.cloud.yaml").read_text()
    config = yaml.safe_load(stack_text)["config"]
    for line in lines:
        key_name = line.split()[4]
        value = run(logged_in(f"pulumi config get {key_name} --stack \"$STACK\"\n"), env, project).stdout
        value = value.strip().splitlines()[-1]  # after the login's own line
        assert re.fullmatch(r"[0-9a-f]{64}", value), (key_name, value)
        assert config[key_name]["secure"].startswith("v1:") and value not in stack_text


def test_a_lock_left_behind_refuses_the_next_operation_until_cancelled(
        env: dict[str, str], project: Path, server: MotoServer) -> None:
    s3 = client("s3", server)
    if STATE not in keys(server):
        pytest.skip("needs the stack the previous test made")
    lock = {"pid": 4242, "username": "ci", "hostname": "runner-7", "timestamp": "2026-12-04T10:00:00Z"}
    s3.put_object(Bucket=SETTINGS["STATE_BUCKET"], Key=f"{LOCKS}killed-run.json", Body=json.dumps(lock).encode())
    export = logged_in('pulumi stack export --stack "$STACK" --file state.json\n')
    run(export, env, project)
    refused = run(logged_in('pulumi stack import --stack "$STACK" --file state.json\n'), env, project, check=False)
    assert refused.returncode != 0
    assert "the stack is currently locked by 1 lock(s)" in refused.stderr
    assert "created by ci@runner-7 (pid 4242)" in refused.stderr
    run(logged_in(STEPS["cancel-lock"]), env, project)
    assert not [k for k in keys(server) if k.startswith(LOCKS)]
    run(logged_in('pulumi stack import --stack "$STACK" --file state.json\n'), env, project)


def test_tear_down_removes_the_state_and_keeps_the_stack_file(
        env: dict[str, str], project: Path, server: MotoServer) -> None:
    if STATE not in keys(server):
        pytest.skip("needs the stack the first test made")
    run(logged_in(STEPS["stack-rm"]), env, project)
    assert STATE not in keys(server)
    assert "secretsprovider: awskms://" in (project / "Pulumi.cloud.yaml").read_text()
