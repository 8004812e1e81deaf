"""SeaweedFS's bucket job, run for real: the exact script the docker target renders runs under /bin/sh against a stub
``weed`` that answers as ``weed shell`` does (a failed command's error on stderr, exit status 0)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lakehouse_platform.services.plans import ContainerHost
from lakehouse_platform.services.seaweedfs import definition as seaweedfs
from tests.support.job_scripts import lab_ctx, run_script

# Answers as `weed shell` does (weed/shell): one bucket per line in s3.bucket.list, and a failed
# command's error on stderr with exit status 0 (processEachCmd prints it and goes on).
FAKE_WEED = r"""#!/bin/sh
state="$FAKE_WEED_STATE"
echo "$*" >> "$state.args"
read -r command rest
case "$command" in
  s3.bucket.list) while read -r b; do printf '  %s\tsize:0\tlogical:0\tchunk:0\n' "$b"; done < "$state" ;;
  s3.bucket.create)
    if [ "${FAKE_WEED_FAIL:-}" = 1 ]; then echo "error: create bucket: rpc error: filer unreachable" >&2
    else echo "create bucket under /buckets"; echo "${rest#-name }" >> "$state"; fi ;;
esac
exit 0
"""


@pytest.fixture
def weed(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "weed"
    stub.write_text(FAKE_WEED)
    stub.chmod(0o755)
    state = tmp_path / "buckets"
    state.write_text("")
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_WEED_STATE": str(state)}


def bucket_script() -> str:
    plan = seaweedfs.container.bucket_job(lab_ctx(seaweedfs.BUCKET_JOB), ContainerHost(state_dir=Path("/x")))
    assert plan.entrypoint == ["/bin/sh", "-c"]
    return plan.command[0]


def test_bucket_job_creates_the_bucket_once_and_checks_it(weed: dict[str, str]) -> None:
    created = run_script(bucket_script(), weed)
    assert created.returncode == 0, created.stderr
    assert "bucket warehouse created" in created.stdout
    again = run_script(bucket_script(), weed)
    assert again.returncode == 0 and "bucket warehouse exists" in again.stdout
    calls = Path(weed["FAKE_WEED_STATE"] + ".args").read_text().splitlines()
    assert calls[0] == "shell -master=seaweedfs:9333 -filer=seaweedfs:8888"
    assert len(calls) == 3 + 1  # list, create, list; then one list


def test_bucket_job_fails_when_weed_shell_swallows_the_error(weed: dict[str, str]) -> None:
    failed = run_script(bucket_script(), {**weed, "FAKE_WEED_FAIL": "1"})
    assert failed.returncode == 1
    assert "bucket warehouse is missing after s3.bucket.create" in failed.stderr
    assert "filer unreachable" in failed.stdout  # weed's own error is in the job's log
