"""``Connector``: one connector on a Kafka Connect worker, through its REST API (a typed Pulumi dynamic resource,
the docker and native targets' deployment step).

Create and update validate the config with the plugin (``PUT /connector-plugins/<class>/config/validate``),
then ``PUT /connectors/<name>/config`` **only when the stored config differs** (an identical PUT still
restarts the tasks), then wait until the connector and every task are RUNNING. Connect never restarts a failed
part by itself, and a sink task fails for good when the store or the catalog it writes to is down while it runs
(an upgrade restarting SeaweedFS or the catalog gate); so the wait restarts FAILED parts
(``POST /connectors/<name>/restart?includeTasks=true&onlyFailed=true``) a few times, spaced out, before a part
still FAILED raises with Connect's trace. A connector or task left FAILED on the worker is a change too, and so is
a connector left STOPPED or PAUSED (by hand, or by a broker drain cut short:
``lakehouse_platform.services.kafka_connect.runtime``):
a declared connector runs, so its step resumes it (``PUT /connectors/<name>/resume``).

Delete is ``DELETE /connectors/<name>``: Connect keeps the offsets, so a connector declared again resumes where it
stopped (no new snapshot, no duplicate) — except with ``reset_offsets_on_delete`` (a CDC source, whose slot the
platform drops with it: its offsets would point at WAL that is gone, and Debezium refuses to start from them), which
stops the connector and deletes its offsets first, so a source declared again snapshots afresh. The config holds no
secret (config-provider references), so nothing secret is in the state. ``diff`` checks the live state: a connector
deleted by hand is a change, so the next ``pulumi up`` converges. The provider travels by reference to its
class (``lakehouse_platform.providers``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.dynamic
import requests

from lakehouse_platform.providers import PlainBlob, code_changed, dropped, is_unknown, plain, poll

HTTP_TIMEOUT_S = 30.0
POLL_S = 0.5
CONFLICT = 409
REBALANCE_SETTLE_S = 60.0
# A FAILED part is restarted this many times, this far apart, before its failure is the step's.
RESTARTS = 3
RESTART_SPACING_S = 10.0
#: Connector states that hold it until it is resumed (``PUT /connectors/<name>/resume``).
HELD = ("STOPPED", "PAUSED")
# Connect's own health check (GET /health, Kafka 3.9+) answers within its 10 s herder timeout: 200 when the
# worker can act, 5xx when it cannot (its Kafka is down). A delete asks it first, and waits this long at most.
HEALTH_TIMEOUT_S = 15.0
# Worker URL -> why it cannot act, once found in this provider process: the other connectors of the same
# destroy are dropped at once instead of each waiting out the same dead worker.
_UNABLE: dict[str, str] = {}


class ConnectorError(Exception):
    """A connector could not be applied or removed; the message is for the operator (never holds a secret)."""


def connect_call(method: str, url: str, body: Any = None, settle_s: float = REBALANCE_SETTLE_S) -> tuple[int, Any]:
    """One Connect REST call: (status, JSON body or text). Never through a proxy: Connect is the platform's.

    A 409 is Connect saying "not now" (a rebalance, or a config topic the worker has not read up to: "stale
    configuration", seen on a worker right after a connector was stopped); the call is made again every
    ``POLL_S`` for ``settle_s`` at most, then its last answer is returned.
    """
    conflicts: list[tuple[int, Any]] = [(CONFLICT, None)]

    def once() -> tuple[int, Any] | None:
        answer = _call_once(method, url, body)
        if answer[0] == CONFLICT:
            conflicts[0] = answer
            return None
        return answer

    return poll(once, settle_s, POLL_S) or conflicts[0]


def _call_once(method: str, url: str, body: Any) -> tuple[int, Any]:
    with requests.Session() as session:
        session.trust_env = False
        response = session.request(method, url, json=body, timeout=HTTP_TIMEOUT_S,
                                   headers={"Accept": "application/json"})
    try:
        return response.status_code, response.json() if response.content else None
    except ValueError:
        return response.status_code, response.text


def validation_errors(base: str, name: str, config: Mapping[str, str]) -> list[str]:
    """What the plugin itself refuses in ``config`` (empty when valid)."""
    plugin = config.get("connector.class", "")
    status, body = connect_call("PUT", f"{base}/connector-plugins/{plugin}/config/validate", {**config, "name": name})
    if status != 200 or not isinstance(body, dict):
        return [f"validate answered {status}: {str(body)[:500]}"]
    values = [item.get("value") or {} for item in body.get("configs") or []]
    return [f"{v.get('name')}: {'; '.join(v['errors'])}" for v in values if v.get("errors")]


def stored_config(base: str, name: str) -> dict[str, str] | None:
    """The connector's config as Connect stores it (with ``name``), None when it has no such connector."""
    status, body = connect_call("GET", f"{base}/connectors/{name}/config")
    if status == 404:
        return None
    if status != 200:
        raise ConnectorError(f"connector {name}: GET config answered {status}: {str(body)[:500]}")
    return dict(body)


def wait_running(base: str, name: str, timeout_s: float, restarts: int = RESTARTS,
                 spacing_s: float = RESTART_SPACING_S) -> dict[str, Any]:
    """Until the connector and all its tasks are RUNNING: a held connector resumed, FAILED parts restarted
    ``restarts`` times at most.

    Connect never restarts a FAILED part by itself, and a part fails for good when what it reaches was down while it
    ran (a sink whose catalog restarted in the same ``pulumi up``); a STOPPED or PAUSED connector stays so until it
    is resumed, and a declared connector runs. Both calls are asynchronous: the status may still say FAILED or
    STOPPED for a moment, so a call is made again only ``spacing_s`` after the last one, and a part still FAILED
    then, with no restart left, raises with Connect's trace.
    """
    last: list[Any] = [None]
    budget = {"left": restarts, "at": float("-inf")}

    def running() -> dict[str, Any] | None:
        status, body = connect_call("GET", f"{base}/connectors/{name}/status")
        last[0] = body
        if status != 200 or not isinstance(body, dict):
            return None
        if body.get("tasks") and all(s == "RUNNING" for s in
                                     (body["connector"]["state"], *(t["state"] for t in body["tasks"]))):
            return body
        if time.monotonic() - budget["at"] < spacing_s:
            return None
        if held_in(body):
            budget["at"] = time.monotonic()
            resume(base, name)
        elif failed_in(body):
            if budget["left"] <= 0:
                trace = body["connector"].get("trace") or next(
                    (t.get("trace") for t in body.get("tasks", []) if t.get("trace")), "")
                raise ConnectorError(f"connector {name} FAILED after {restarts} restart(s): {trace[:3000]}")
            budget["left"] -= 1
            budget["at"] = time.monotonic()
            restart_failed(base, name)
        return None

    found = poll(running, timeout_s, POLL_S)
    if found is None:
        raise ConnectorError(f"connector {name} not RUNNING within {timeout_s:g}s; "
                             f"last status: {json.dumps(last[0])[:1500]}")
    return found


def wait_tasks_reconfigured(base: str, name: str, config: Mapping[str, str], timeout_s: float) -> bool:
    """Until every task runs with ``config`` (the keys tasks carry; references compared as stored).

    Right after a PUT the status still shows the old tasks RUNNING; waiting for the new task
    configs keeps ``wait_running`` from reporting the connector ready before it restarted.
    """
    def reconfigured() -> bool | None:
        status, body = connect_call("GET", f"{base}/connectors/{name}/tasks")
        return True if status == 200 and isinstance(body, list) and body and all(
            task.get("config", {}).get(key, value) == value
            for task in body for key, value in config.items() if "${" not in value) else None

    return poll(reconfigured, timeout_s, POLL_S) is not None


def connector_status(base: str, name: str) -> dict[str, Any] | None:
    """``GET /connectors/<name>/status``: None when there is no such connector (or no answer to read)."""
    status, body = connect_call("GET", f"{base}/connectors/{name}/status")
    return body if status == 200 and isinstance(body, dict) else None


def failed_in(status: Mapping[str, Any] | None) -> list[str]:
    """The parts a status reports FAILED ("connector", "task 0", ...)."""
    if not status:
        return []
    parts = ["connector"] if (status.get("connector") or {}).get("state") == "FAILED" else []
    return parts + [f"task {t.get('id')}" for t in status.get("tasks") or [] if t.get("state") == "FAILED"]


def held_in(status: Mapping[str, Any] | None) -> str | None:
    """STOPPED or PAUSED when a status says the connector is held so (by hand, or by a broker drain cut short)."""
    state = ((status or {}).get("connector") or {}).get("state")
    return state if state in HELD else None


def resume(base: str, name: str) -> None:
    """Resume a STOPPED or PAUSED connector (``PUT /connectors/<name>/resume``): a declared connector runs."""
    status, body = connect_call("PUT", f"{base}/connectors/{name}/resume")
    if status not in (200, 202, 204):
        raise ConnectorError(f"connector {name}: PUT resume answered {status}: {str(body)[:500]}")


def restart_failed(base: str, name: str) -> None:
    """Restart the connector's FAILED parts (Connect 3.0+: one call for the connector and its tasks)."""
    status, body = connect_call("POST", f"{base}/connectors/{name}/restart?includeTasks=true&onlyFailed=true")
    if status not in (200, 202, 204):
        raise ConnectorError(f"connector {name}: POST restart answered {status}: {str(body)[:500]}")


def apply_connector(base: str, name: str, config: Mapping[str, str], timeout_s: float) -> str:
    """Create or update a connector, then wait RUNNING; returns created / updated / restarted / resumed / unchanged."""
    config = {str(k): str(v) for k, v in config.items()}
    problems = validation_errors(base, name, config)
    if problems:
        raise ConnectorError(f"connector {name}: its plugin refuses the config: " + " | ".join(problems))
    current = stored_config(base, name)
    if current == {**config, "name": name}:
        state = connector_status(base, name)  # left FAILED or held: wait_running restarts or resumes it
        action = "restarted" if failed_in(state) else "resumed" if held_in(state) else "unchanged"
    else:
        status, body = connect_call("PUT", f"{base}/connectors/{name}/config", config)
        if status not in (200, 201):
            raise ConnectorError(f"connector {name}: PUT config answered {status}: {str(body)[:1000]}")
        action = "created" if status == 201 else "updated"
        if not held_in(connector_status(base, name)):  # a held connector has no tasks to reconfigure until resumed
            wait_tasks_reconfigured(base, name, config, timeout_s)
    wait_running(base, name, timeout_s)
    return action


def reset_offsets(base: str, name: str, timeout_s: float = 60.0) -> None:
    """Stop the connector, then delete its offsets (Connect refuses to alter the offsets of a running one)."""
    status, body = connect_call("PUT", f"{base}/connectors/{name}/stop")
    if status == 404:
        return
    if status not in (200, 202, 204):
        raise ConnectorError(f"connector {name}: PUT stop answered {status}: {str(body)[:500]}")
    def stopped() -> bool | None:
        status, body = connect_call("GET", f"{base}/connectors/{name}/status")
        return True if status == 200 and body["connector"]["state"] == "STOPPED" else None

    poll(stopped, timeout_s, POLL_S)  # its offsets are deleted once it stopped (or the wait ran out)
    status, body = connect_call("DELETE", f"{base}/connectors/{name}/offsets")
    if status not in (200, 202, 204, 404):
        raise ConnectorError(f"connector {name}: DELETE offsets answered {status}: {str(body)[:500]}")


def unable_to_act(base: str) -> str | None:
    """Why the worker cannot act now (not running, or failing its own health check: its Kafka is down), else None.

    A worker without ``/health`` (404, before Kafka 3.9) counts as able: its calls then say for themselves.
    """
    if base in _UNABLE:
        return _UNABLE[base]
    try:
        with requests.Session() as session:
            session.trust_env = False
            response = session.get(f"{base}/health", timeout=HEALTH_TIMEOUT_S)
    except requests.ConnectionError:
        why = f"Kafka Connect at {base} is not running"
    except requests.Timeout:
        why = f"Kafka Connect at {base} did not answer its health check within {HEALTH_TIMEOUT_S:g}s"
    else:
        if response.status_code in (200, 404):
            return None
        why = f"Kafka Connect at {base} cannot act (GET /health: {response.status_code} {response.text.strip()[:200]})"
    _UNABLE[base] = why
    return why


def delete_connector(base: str, name: str, reset: bool = False) -> str:
    """DELETE the connector (404: already gone), its offsets first when ``reset``.

    A worker that cannot act (not running, or its Kafka down: a crashed Kafka, or Kafka and Connect both being
    destroyed) is not waited for: the connector is dropped from the state with a warning. It stays in the
    worker's config topic, and a worker started again on that Kafka runs it again: delete it there by hand if
    it was meant to go while the worker was down.
    """
    why = unable_to_act(base)
    if why is None:
        try:
            if reset:
                reset_offsets(base, name)
            status, body = connect_call("DELETE", f"{base}/connectors/{name}")
        except (requests.ConnectionError, requests.Timeout) as exc:
            why = _UNABLE.setdefault(base, f"Kafka Connect at {base} stopped answering ({type(exc).__name__})")
    if why is not None:
        dropped(f"connector {name}", why + (", so its offsets stay too" if reset else ""))
        return "dropped"
    if status not in (200, 204, 404):
        raise ConnectorError(f"connector {name}: DELETE answered {status}: {str(body)[:500]}")
    return "absent" if status == 404 else "deleted"


CONNECTOR_INPUTS = ("name", "connect_url", "config", "running_timeout_s", "reset_offsets_on_delete")


def _changes(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """The inputs that changed, and ``config`` when the worker's connector is not the declared one."""
    old, new = plain(olds), plain(news)
    changed = [k for k in CONNECTOR_INPUTS if is_unknown(news.get(k)) or old.get(k) != new.get(k)]
    if not changed and not is_unknown(news.get("config")):
        # Converge on the worker's real state: a connector removed or edited by hand is a change.
        try:
            live = stored_config(new["connect_url"], new["name"])
            if live != {**{str(k): str(v) for k, v in new["config"].items()}, "name": new["name"]}:
                changed.append("config")
            elif failed_in(state := connector_status(new["connect_url"], new["name"])) or held_in(state):
                changed.append("state")  # left FAILED, STOPPED or PAUSED: the update restarts or resumes it
        except (requests.RequestException, ConnectorError):
            pass  # unreachable worker: the inputs decide
    return changed


class ConnectorProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Create/update/delete of one Connect connector (contract: module docstring)."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        failures = []
        config = news.get("config")
        if not is_unknown(config) and (not isinstance(config, Mapping) or "connector.class" not in config):
            failures.append(pulumi.dynamic.CheckFailure("config", "a connector config needs connector.class"))
        url = news.get("connect_url")
        if not is_unknown(url) and not str(url).startswith("http"):
            failures.append(pulumi.dynamic.CheckFailure("connect_url", "must be the worker's http(s) REST URL"))
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        p = plain(props)
        action = apply_connector(p["connect_url"], p["name"], p["config"], float(p.get("running_timeout_s", 180)))
        return pulumi.dynamic.CreateResult(p["name"], {**p, "last_action": action})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = _changes(olds, news)
        return pulumi.dynamic.DiffResult(changes=bool(changed) or code_changed(olds, news),
                                         replaces=["name"] if "name" in changed else [],
                                         stables=[], delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        p = plain(news)
        if not _changes(olds, news):  # only the provider's code changed: recorded, the worker left alone
            return pulumi.dynamic.UpdateResult({**p, "last_action": plain(olds).get("last_action", "")})
        action = apply_connector(p["connect_url"], p["name"], p["config"], float(p.get("running_timeout_s", 180)))
        return pulumi.dynamic.UpdateResult({**p, "last_action": action})

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        p = plain(props)
        try:
            live = stored_config(p["connect_url"], p["name"])
        except (requests.RequestException, ConnectorError):
            return pulumi.dynamic.ReadResult(id_, p)
        if live is None:
            return pulumi.dynamic.ReadResult(id_, {**p, "config": {}})
        live.pop("name", None)
        return pulumi.dynamic.ReadResult(id_, {**p, "config": live})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        p = plain(props)
        delete_connector(p["connect_url"], p["name"], bool(p.get("reset_offsets_on_delete")))


class Connector(pulumi.dynamic.Resource, module="streams", name="Connector"):
    """One connector registered on a Kafka Connect worker (contract: module docstring)."""

    last_action: pulumi.Output[str]
    """created, updated, restarted or unchanged: what the last create/update did."""

    def __init__(self, resource_name: str, *, name: pulumi.Input[str], connect_url: pulumi.Input[str],
                 config: pulumi.Input[Mapping[str, pulumi.Input[str]]], running_timeout_s: pulumi.Input[float] = 180.0,
                 reset_offsets_on_delete: bool = False, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(ConnectorProvider(), resource_name,
                         {"name": name, "connect_url": connect_url, "config": config,
                          "running_timeout_s": running_timeout_s, "reset_offsets_on_delete": reset_offsets_on_delete,
                          "last_action": None}, opts)


