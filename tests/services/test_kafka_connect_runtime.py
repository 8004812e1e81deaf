"""The drain the broker runs before it stops for an update: Kafka Connect's source connectors stopped (their
offsets committed while the broker still runs), and resumed once it is back; against a stand-in for Connect's REST
API (the routes and shapes of KIP-875's stop and resume). The e2e upgrade test runs it against a real worker."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from lakehouse_platform.services.kafka_connect import runtime as connect_drain
from tests.support.job_scripts import Answer


class FakeConnect:
    """A source connector ``cdc`` (RUNNING), a sink, and a source an operator paused; the first resume answers 409
    (rebalancing), the second 500 (the herder busy), as a worker rejoining a restarted broker may."""

    def __init__(self) -> None:
        self.states = {"cdc": "RUNNING", "sink": "RUNNING", "held": "PAUSED"}
        self.kinds = {"cdc": "source", "sink": "sink", "held": "source"}
        self.busy = [Answer(409, {"error_code": 409, "message": "Cannot complete request momentarily due to stale "
                                                                "configuration (typically caused by a concurrent "
                                                                "config change)"}),
                     Answer(500, {"error_code": 500, "message": "Request timed out"})]
        self.stopping: set[str] = set()

    def answer(self, method: str, path: str, _headers: dict[str, str], _body: bytes) -> Answer:
        if path.startswith("/connectors?"):
            return Answer(200, {n: {"status": {"connector": {"state": s}}, "info": {"type": self.kinds[n]}}
                                for n, s in self.states.items()})
        name, _, action = path.removeprefix("/connectors/").partition("/")
        if action == "status":
            if name in self.stopping:  # one more read before the stop shows, as a worker's tasks take a moment
                self.stopping.discard(name)
            elif self.states[name] == "STOPPING":
                self.states[name] = "STOPPED"
            return Answer(200, {"connector": {"state": self.states[name]}, "tasks": []})
        if method == "PUT" and action == "stop":
            self.states[name] = "STOPPING"
            self.stopping.add(name)
            return Answer(202)
        if method == "PUT" and action == "resume":
            if self.busy:  # as a worker rejoining the restarted broker answers, first
                return self.busy.pop(0)
            self.states[name] = "RUNNING"
            return Answer(202)
        return Answer(404)


def test_the_running_sources_are_stopped_then_resumed_and_nothing_else(serve, tmp_path: Path) -> None:
    connect = FakeConnect()
    api = serve(connect.answer)
    marker = tmp_path / "drained.json"
    assert connect_drain.stop(api.url, marker, 10) == ["cdc: STOPPED", "held: PAUSED, left alone"]
    assert json.loads(marker.read_text()) == ["cdc"]
    assert connect.states == {"cdc": "STOPPED", "sink": "RUNNING", "held": "PAUSED"}

    assert connect_drain.resume(api.url, marker, 10) == ["cdc: resumed"]
    assert connect.states == {"cdc": "RUNNING", "sink": "RUNNING", "held": "PAUSED"}
    assert not marker.exists()
    assert connect_drain.resume(api.url, marker, 10) == [], "nothing drained: nothing resumed"
    changing = [(m, p) for m, p, *_ in api.requests if m == "PUT"]
    assert changing == [("PUT", "/connectors/cdc/stop")] + [("PUT", "/connectors/cdc/resume")] * 3


def test_a_worker_that_does_not_answer_leaves_the_broker_to_restart(tmp_path: Path, capsys) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    assert connect_drain.main(["stop", url, str(tmp_path / "drained.json"), "1"]) == 0
    assert "does not answer" in capsys.readouterr().out
    assert not (tmp_path / "drained.json").exists()
