"""``PushedImage`` (lakehouse_platform/components/aws/pushed_image.py) without an engine: what identifies an image, the context sent to
the engine, the diff, the checks, and the provider loading without the repository. The build and push run for
real against a local registry in tests/lab/test_image_push.py (marker ``lab``)."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from lakehouse_platform.components.aws import pushed_image as pi
from tests.support import REPO_ROOT

FILES = ["Dockerfile", "app/main.py", "app/run.sh"]
ARGS = {"BASE": "debian:bookworm-20260202-slim", "PG_MAJOR": "15"}


@pytest.fixture
def context(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "Dockerfile").write_text("FROM base\nCOPY app /app\n")
    (tmp_path / "app" / "main.py").write_text("print('hello')\n")
    (tmp_path / "app" / "run.sh").write_text("#!/bin/sh\nexec python /app/main.py\n")
    (tmp_path / "app" / "run.sh").chmod(0o755)
    (tmp_path / "notes.txt").write_text("not in the context\n")
    return tmp_path


def digest(root: Path, files: list[str] = FILES, args: dict[str, str] = ARGS, platform: str = "linux/amd64") -> str:
    return pi.context_digest(root, files, "Dockerfile", args, platform)


def test_the_digest_changes_with_what_the_image_is_made_of_and_nothing_else(context: Path) -> None:
    first = digest(context)
    assert first == digest(context, list(reversed(FILES)))  # the order files are listed in is no content
    (context / "notes.txt").write_text("changed, but not in the context\n")
    assert digest(context) == first
    os.utime(context / "app" / "main.py", (0, 0))  # a touched file is the same file
    assert digest(context) == first
    changes = []
    (context / "app" / "main.py").write_text("print('changed')\n")
    changes.append(digest(context))
    (context / "app" / "main.py").write_text("print('hello')\n")
    assert digest(context) == first
    (context / "app" / "other.py").write_text("print('hello')\n")
    changes.append(digest(context, [*FILES, "app/other.py"]))  # a file more
    changes.append(digest(context, args={**ARGS, "PG_MAJOR": "16"}))  # an argument the image is built with
    changes.append(digest(context, platform="linux/arm64"))
    assert len({first, *changes}) == 1 + len(changes)
    assert pi.tag_of("0.3.0", first) == f"0.3.0-{first[:12]}"


def test_the_context_sent_is_exactly_the_files_with_fixed_owners_and_times(context: Path) -> None:
    blob = pi.context_tar(context, FILES)
    assert blob == pi.context_tar(context, list(reversed(FILES)))  # the same bytes every time
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(members) == sorted(FILES)
        assert {(m.uid, m.gid, m.mtime) for m in members.values()} == {(0, 0, 0)}
        assert members["app/run.sh"].mode == 0o755 and members["app/main.py"].mode == 0o644
        assert tar.extractfile("app/main.py").read() == b"print('hello')\n"  # type: ignore[union-attr]


def test_only_another_repository_or_context_is_another_image() -> None:
    provider = pi.PushedImageProvider()
    olds = {"repository": "r.example/ops", "context_digest": "a" * 64, "tag": "0.3.0-aaaaaaaaaaaa",
            "context": "/home/me/repo", "host_args": {"CA_CERTIFICATES": ""}, "digest": "sha256:1"}
    # New credentials every run, the checkout elsewhere, another machine's certificates: the same image.
    news = {**olds, "context": "/runner/work/repo", "host_args": {"CA_CERTIFICATES": "-----BEGIN..."},
            "registry": {"username": "AWS", "password": "fresh"}}
    assert provider.diff("id", olds, news).changes is False
    for key, value in (("context_digest", "b" * 64), ("repository", "r.example/other")):
        result = provider.diff("id", olds, {**news, key: value})
        assert result.changes is True and result.replaces == [key] and result.delete_before_replace is False


def test_inputs_are_checked_with_the_property_named() -> None:
    good = {"repository": "r.example/ops", "tag": "0.3.0-a", "context": "/repo", "dockerfile": "Dockerfile",
            "context_digest": "a" * 64, "platform": "linux/amd64", "files": ["Dockerfile"]}
    assert pi.problems(good) == []
    assert pi.problems({**good, "files": []}) == [("files", "the build context needs at least one file")]
    assert pi.problems({**good, "dockerfile": "other/Dockerfile"}) == [
        ("dockerfile", "'other/Dockerfile' is not among the context's files")]
    assert pi.problems({**good, "repository": "r.example/ops:1"}) == [
        ("repository", "a repository names no tag and no digest")]
    assert pi.problems({**good, "repository": "r.example/ops@sha256:1"})[0][0] == "repository"
    assert ("tag", "tag must be a non-empty string") in pi.problems({**good, "tag": ""})
    # A preview before the repository exists: its URL is not known yet, and that is no problem.
    from pulumi.output import Unknown

    assert pi.problems({**good, "repository": Unknown()}) == []
    failures = pi.PushedImageProvider().check({}, {**good, "files": []}).failures
    assert [(f.property, f.reason) for f in failures] == [("files", "the build context needs at least one file")]


def test_without_an_engine_the_error_says_where_it_looked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(pi.ImagePushError, match=f"needs a Docker engine; none answers at unix://{tmp_path}/no-engine"):
        pi.build_and_push({"repository": "r.example/ops", "tag": "t", "registry": {"username": "u", "password": "p"}})


def test_serialized_provider_loads_by_reference_in_a_provider_process() -> None:
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(pi.PushedImageProvider())
    assert blob == serialize_provider(pi.PushedImageProvider()), "deterministic, or every up shows a diff"
    code = ("import base64, sys, dill\n"
            "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
            "print(type(p).__name__, p.diff('i', {'repository': 'r', 'context_digest': 'a'},"
            " {'repository': 'r', 'context_digest': 'b'}).replaces)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], input=blob, cwd="/", env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["PushedImageProvider", "['context_digest']"]
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"
