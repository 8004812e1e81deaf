"""Shared fixtures: the stacks' programs evaluated under Pulumi mocks, from the real stack files, and stand-in HTTP APIs.

Each run is made once per test process (``cached_run``): tests only read what a run registered.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.harness import ProgramRun, cached_run
from tests.support.job_scripts import Answer, FakeApi
from tests.support.stacks import cloud_platform, cloud_with_tables_platform, stack_platform, with_changes


@pytest.fixture(scope="module")
def lab_run() -> ProgramRun:
    """The lab program evaluated once under mocks (docker provider mocked: no engine here)."""
    return cached_run("lab", stack_platform("lab"))


@pytest.fixture(scope="module")
def lab(lab_run: ProgramRun) -> ProgramRun:
    """The lab program (``lab_run``), by the name the signals and governance checks use."""
    return lab_run


@pytest.fixture(scope="session")
def native_run() -> ProgramRun:
    """The native program evaluated once per session under mocks (FakeResolver: no cache, no ports)."""
    return cached_run("native", stack_platform("native"))


@pytest.fixture(scope="session")
def cloud_run() -> ProgramRun:
    """The cloud program evaluated once per session under mocks (the aws provider mocked: no account here)."""
    return cached_run("cloud", stack_platform("cloud"))


# -- the cloud stack and two variants of it (the aws checks of tests/targets/aws and tests/services) ----------


@pytest.fixture(scope="module")
def cloud() -> ProgramRun:
    """Pulumi.cloud.yaml as it is."""
    return cached_run("cloud", cloud_platform())


@pytest.fixture(scope="module")
def five_workers_no_spark() -> ProgramRun:
    """Five Trino workers, no EMR Serverless, no replica bucket."""
    platform = with_changes(trino_workers=5, spark_emr_serverless=False)
    platform["storage"]["replica_bucket"] = False
    return cached_run("cloud", platform)


@pytest.fixture(scope="module")
def streaming() -> ProgramRun:
    """Kafka on MSK, a replica in another region, an alarm e-mail."""
    platform = with_changes(kafka_msk=True, replica_region="eu-central-1")
    platform["observability"] = {"alarm_email": "oncall@example.com"}
    return cached_run("cloud", platform)


@pytest.fixture(scope="module")
def cloud_with_tables() -> ProgramRun:
    """The cloud stack with one declared table (the declared-tables task, the maintenance jobs' tables)."""
    return cached_run("cloud", cloud_with_tables_platform())


# -- which worker runs what (`make unit`, `make test`: pytest-xdist, ``--dist loadgroup``) ------------------------

#: The cloud stack's variants: seconds each to evaluate, once per test process (``cached_run``).
CLOUD_VARIANTS = {"five_workers_no_spark", "streaming", "cloud_with_tables"}

#: The e2e tier's two lanes: `make test` runs the tier on two workers, a lane each, so that the deploys of one lane
#: overlap the other's waits (a deploy is mostly waiting: the machine was a third busy in one). Seconds in the
#: lanes, measured: upgrade 830, bumps 677, moved checkout 110, service down 81, and the tests needing a tool
#: (``TOOL_LANE``: 250 alone, a fifth busy) | the probes 1068, team project 930. An upgrade and the bumps fetch
#: artifacts of earlier pins: the same lane, never at once.
E2E_LANES = {
    "tests/e2e/test_upgrade.py": "e2e-lane-1",
    "tests/e2e/test_bumps.py": "e2e-lane-1",
    "tests/e2e/test_moved_checkout.py": "e2e-lane-1",
    "tests/e2e/test_service_down_destroy.py": "e2e-lane-1",
    "tests/e2e/test_team_project.py": "e2e-lane-2",
    "tests/e2e/test_probes_on_an_isolated_stack.py": "e2e-lane-2",
}
#: The lane of the modules marked ``toolchain`` or ``lab`` (they run with the e2e tier in `make test`).
TOOL_LANE = "e2e-lane-1"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test module runs whole on one worker (what ``--dist loadfile`` does), the modules that read the cloud
    stack's variants all on the same one (spread over both workers, each worker would evaluate every variant), and
    the e2e modules by their lane (``E2E_LANES``), the tests needing a tool in ``TOOL_LANE``."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    for module, module_items in modules.items():
        reads_variants = any(
            CLOUD_VARIANTS & set(getattr(item, "fixturenames", ()))
            or getattr(getattr(item, "callspec", None), "params", {}).get("run_name") in CLOUD_VARIANTS
            for item in module_items)
        needs_a_tool = any(item.get_closest_marker("toolchain") or item.get_closest_marker("lab")
                           for item in module_items)
        group = ("cloud-variants" if reads_variants else E2E_LANES.get(module)
                 or (TOOL_LANE if needs_a_tool else module))
        for item in module_items:
            if item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(group))


# -- stand-in HTTP APIs (Kafka Connect, the job scripts' services) ---------------------------------------------


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str, str, dict[str, str], bytes], Answer]], FakeApi]]:
    """Starts stand-in APIs on 127.0.0.1 (``serve(route)``); stops them all when the test ends."""
    servers: list[ThreadingHTTPServer] = []

    def start(route: Callable[[str, str, dict[str, str], bytes], Answer]) -> FakeApi:
        api = FakeApi(route)

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                api.requests.append((self.command, self.path, headers, body))
                answer = api.route(self.command, self.path, headers, body)
                payload = b"" if answer.body is None else json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        api.url = f"http://127.0.0.1:{server.server_address[1]}"
        return api

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
