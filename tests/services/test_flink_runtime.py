"""The drain Flink's managers run before they stop for an update: a savepoint, tried again while the job fails over.

Against a stand-in for Flink's REST API (a few routes, the shapes Flink answers): what a real cluster does while a
dependency restarts (the job RESTARTING, a savepoint failing with "Task has failed") cannot be timed in a unit test;
the e2e tier's upgrade and bump tests run the drain against real clusters.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lakehouse_platform.services.flink import runtime as flink_drain


class FakeFlink:
    """One job: its states in turn on each status read, savepoints failing ``failures`` times, then completing."""

    def __init__(self, states: list[str], failures: int) -> None:
        self.states, self.failures = list(states), failures
        self.stops: list[str] = []
        self.state = self.states[0]

    def read_state(self) -> str:
        if len(self.states) > 1:
            self.state = self.states.pop(0)
        else:
            self.state = self.states[0]
        return self.state

    def answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path == "/jobs/overview":
            return 200, {"jobs": [{"jid": "j1", "name": "orders", "state": self.state},
                                  {"jid": "j0", "name": "orders", "state": "FINISHED"}]}
        if path == "/jobs/j1" and method == "GET":
            state = self.read_state()
            return 200, {"state": state, "vertices": [{"status": "RUNNING" if state == "RUNNING" else "SCHEDULED"}]}
        if path == "/jobs/j1/stop":
            self.stops.append(body["targetDirectory"])
            return 202, {"request-id": f"r{len(self.stops)}"}
        if path.startswith("/jobs/j1/savepoints/"):
            if self.failures:
                self.failures -= 1
                return 200, {"status": {"id": "COMPLETED"},
                             "operation": {"failure-cause": {"class": "CheckpointException: Task has failed"}}}
            self.states = ["FINISHED"]
            return 200, {"status": {"id": "COMPLETED"}, "operation": {"location": "file:///sp/savepoint-1"}}
        return 404, {"errors": ["not found"]}


@pytest.fixture
def flink(request: pytest.FixtureRequest) -> Iterator[tuple[FakeFlink, str]]:
    fake = FakeFlink(*request.param)

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
            status, answer = fake.answer(method, self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._reply("GET")

        def do_POST(self) -> None:
            self._reply("POST")

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flink_drain, "POLL_S", 0.01)


@pytest.mark.parametrize("flink", [(["RESTARTING", "RESTARTING", "RUNNING"], 1)], indirect=True)
def test_a_savepoint_that_fails_while_the_job_fails_over_is_taken_once_it_runs_again(
        flink: tuple[FakeFlink, str]) -> None:
    fake, url = flink
    done = flink_drain.drain(url, "orders", "file:///sp", timeout_s=10)
    assert done == ["j1: savepoint file:///sp/savepoint-1 (attempt 2)"]
    assert fake.stops == ["file:///sp", "file:///sp"], "only the active job, stopped again after the failure"


@pytest.mark.parametrize("flink", [(["RESTARTING"], 0)], indirect=True)
def test_a_job_that_never_runs_again_is_given_up_on_at_the_timeout(flink: tuple[FakeFlink, str]) -> None:
    fake, url = flink
    done = flink_drain.drain(url, "orders", "file:///sp", timeout_s=0.3)
    assert len(done) == 1 and done[0].startswith("j1: no savepoint within 0.3s (0 attempts") and not fake.stops


def test_an_unreachable_job_manager_is_said_and_the_step_still_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    assert flink_drain.main(["http://127.0.0.1:9", "orders", "file:///sp", "1"]) == 0
    assert "drain: Flink REST http://127.0.0.1:9 does not answer" in capsys.readouterr().out
