"""The catalog gate: a real gate process on loopback (lakehouse_platform.probes.support.gate) in front of a stand-in catalog, the
gate's own code (lakehouse_platform/runtime/catalog_gate.py), the OAuth2 token endpoint, and how each target runs it."""

from __future__ import annotations

import base64
import hashlib
import http.client
import http.server
import json
import re
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lakehouse_platform.probes.support import gate as support_gate
from lakehouse_platform.probes.support.fixture import free_port
from lakehouse_platform.runtime import catalog_gate, catalog_requests
from lakehouse_platform.version import PLATFORM_VERSION
from tests.support import REPO_ROOT
from tests.support.harness import SECRET_KEY
from tests.support.rendered import reveal, uploads
from tests.support.stacks import native_spec


class _Upstream(http.server.BaseHTTPRequestHandler):
    """A stand-in catalog: answers 200 with what it received (so the test sees what the gate forwarded).

    Like the fixture's Jetty it sends Date and Server headers of its own, answers HEAD with the length
    a GET would have and no body, and a path with ``missing`` 404 in the Iceberg error form. A namespace
    listing (``GET /v1/namespaces``) answers ``NAMESPACES``."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []  # every path the catalog was asked for, across servers (tests check what never came)

    def log_message(self, *args):  # quiet
        pass

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.seen.append(self.path)
        method = "GET" if self.command == "HEAD" else self.command  # HEAD: what a GET would say
        body = json.dumps({"method": method, "path": self.path, "body": self.rfile.read(length).decode(),
                           "authorization": self.headers.get("Authorization")}).encode()
        missing = "missing" in self.path
        if self.command == "GET" and self.path == "/v1/namespaces":
            body = json.dumps({"namespaces": NAMESPACES, "next-page-token": None}).encode()
        if missing:
            body = json.dumps({"error": {"message": "no such namespace", "type": "NoSuchNamespaceException",
                                         "code": 404}}).encode()
        self.send_response(404 if missing else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_DELETE = do_HEAD = _answer


#: What the stand-in catalog lists as its namespaces.
NAMESPACES = [["shop"], ["shop", "eu"], ["finance"], ["made_at_run_time"]]


@contextmanager
def serving(server) -> Iterator[int]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


TOKENS = {"platform": "t-platform", "writer": "t-writer", "reader": "t-reader"}


@contextmanager
def gate_process(upstream_port: int | None = None, **settings) -> Iterator[tuple[str, support_gate.RunningGate]]:
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    port = upstream_port or upstream.server_address[1]
    config = {"upstream": f"http://127.0.0.1:{port}", "identities": support_gate.identities(TOKENS), **settings}
    with serving(upstream), support_gate.running_gate(config) as running:
        yield running.url, running


@contextmanager
def gate(upstream_port: int | None = None) -> Iterator[str]:
    with gate_process(upstream_port) as (url, _):
        yield url


@pytest.fixture(scope="module")
def shared_gate() -> Iterator[tuple[str, support_gate.RunningGate]]:
    """One gate for the tests that count nothing (a gate process takes a second or two to start)."""
    with gate_process() as running:
        yield running


def call(url: str, method: str = "GET", token: str | None = None, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, method=method, data=body)  # noqa: S310 - loopback test server
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback test server
            text = response.read().decode()
            return response.status, json.loads(text) if text.startswith("{") else {"text": text}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode() or "{}")


def metric(text: str, name: str, **labels: str) -> float | None:
    """One sample of the gate's metrics (Prometheus text; labels in any order), or None."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return None


def metrics_of(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:  # noqa: S310
        return response.read().decode()


def test_gate_refuses_missing_and_unknown_tokens_before_the_catalog_sees_them(shared_gate):
    url, _ = shared_gate
    for token in (None, "not-a-token", "Bearer"):
        status, body = call(f"{url}/v1/config", token=token)
        assert status == 401 and body["error"]["type"] == "NotAuthorizedException", (token, status, body)
    status, body = call(f"{url}/v1/namespaces", "POST", token=None, body=b'{"namespace": ["x"]}')
    assert status == 401


def test_gate_lets_readers_read_and_refuses_every_write_of_theirs(shared_gate):
    url, _ = shared_gate
    table = f"{url}/v1/namespaces/sales/tables/orders"
    status, body = call(table, token=TOKENS["reader"])
    assert status == 200 and body["method"] == "GET"
    assert body["authorization"] is None, "the gate must not forward the token to the catalog"
    status, _ = call(f"{table}/metrics", "POST", TOKENS["reader"], b"{}")
    assert status == 200  # a scan report changes nothing
    for method, path in (("POST", table), ("POST", f"{url}/v1/namespaces/sales/tables"), ("DELETE", table),
                         ("POST", f"{url}/v1/transactions/commit"), ("POST", f"{url}/v1/namespaces"),
                         ("POST", f"{url}/v1/tables/rename")):
        status, body = call(path, method, TOKENS["reader"], b"{}")
        assert status == 403 and body["error"]["type"] == "ForbiddenException", (method, path, status)


def test_gate_forwards_writers_and_the_platform_unchanged(shared_gate):
    url, _ = shared_gate
    for who in ("writer", "platform"):
        status, body = call(f"{url}/v1/namespaces/sales/tables/orders", "POST", TOKENS[who], b'{"updates": []}')
        assert status == 200 and body["method"] == "POST" and body["body"] == '{"updates": []}'


def test_gate_says_502_when_the_catalog_is_down_and_counts_what_it_decided():
    with gate(upstream_port=free_port()) as url:
        status, body = call(f"{url}/v1/config", token=TOKENS["writer"])
        assert status == 502 and body["error"]["type"] == "ServiceUnavailableException"
        call(f"{url}/v1/config")  # unauthenticated
        status, _ = call(f"{url}/healthz")
        assert status == 200  # the gate itself, no token, never the catalog
        metrics = metrics_of(url)
    assert metric(metrics, "lakehouse_catalog_gate_requests_total", identity="writer", decision="allowed") == 1
    assert metric(metrics, "lakehouse_catalog_gate_requests_total", identity="none", decision="unauthenticated") == 1
    assert metric(metrics, "lakehouse_catalog_gate_upstream_errors_total") == 1


def test_gate_measures_commit_latency_by_kind_and_each_whole_request():
    assert catalog_gate.kind_of("POST", "/v1/namespaces/a/tables/b") == "commit"
    assert catalog_gate.kind_of("POST", "/v1/transactions/commit") == "commit"
    assert catalog_gate.kind_of("POST", "/v1/namespaces/a/tables") == "create_table"
    assert catalog_gate.kind_of("GET", "/v1/namespaces/a/tables/b") == "load_table"
    with gate() as url:
        call(f"{url}/v1/namespaces/a/tables/b", "POST", TOKENS["writer"], b"{}")
        call(f"{url}/v1/config")  # refused: never reaches the catalog, still served by the gate
        metrics = metrics_of(url)
    assert metric(metrics, "lakehouse_catalog_request_duration_seconds_count", kind="commit") == 1
    assert metric(metrics, "lakehouse_catalog_responses_total", kind="commit", status="2xx") == 1
    # The whole request as the gate serves it (not only the catalog's part), refusals included.
    assert metric(metrics, "lakehouse_catalog_gate_request_duration_seconds_count", kind="commit") == 1
    assert metric(metrics, "lakehouse_catalog_gate_request_duration_seconds_count", kind="config") == 1
    assert metric(metrics, "lakehouse_catalog_request_duration_seconds_count", kind="config") is None


def test_the_gate_runs_on_the_operations_images_dependencies():
    """The docker target runs the gate in the operations image: everything it imports is in that image's lock."""
    import ast
    import importlib.metadata
    import re as regex

    from lakehouse_platform.artifacts.runtime import OPERATIONS_LOCK

    lock = OPERATIONS_LOCK.read_text()
    pinned = {regex.sub(r"[-_.]+", "-", name).lower() for name in regex.findall(r"^([A-Za-z0-9_.-]+)==", lock, regex.M)}
    tree = ast.parse(Path(catalog_gate.__file__).read_text())
    imported = {(node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0)
                for alias in node.names}
    distributions = importlib.metadata.packages_distributions()
    third_party = {name for name in imported if name not in sys.stdlib_module_names and name != "lakehouse_platform"}
    assert third_party >= {"aiohttp", "jwt", "prometheus_client", "pydantic"}
    missing = {name for name in third_party
               if not any(regex.sub(r"[-_.]+", "-", d).lower() in pinned for d in distributions.get(name, []))}
    assert not missing, f"imported by the gate, not in runtime/image/operations.lock: {sorted(missing)}"


def test_the_bearer_scheme_is_matched_in_any_case(shared_gate):
    url, _ = shared_gate
    for scheme in ("bearer", "BEARER", "BeArEr"):
        status, body = call(f"{url}/v1/config", headers={"Authorization": f"{scheme} {TOKENS['writer']}"})
        assert status == 200 and body["path"] == "/v1/config", scheme
    status, _ = call(f"{url}/v1/config", headers={"Authorization": f"Basic {TOKENS['writer']}"})
    assert status == 401


def test_answers_carry_one_date_and_one_server_header_and_head_keeps_the_catalogs_length(shared_gate):
    url, _ = shared_gate
    connection = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=10)
    auth = {"Authorization": f"Bearer {TOKENS['reader']}"}
    lengths = {}
    for method, path, headers in (("GET", "/v1/namespaces/a/tables/b", auth), ("HEAD", "/v1/namespaces/a/tables/b", auth),
                                  ("GET", "/v1/config", {}), ("GET", "/healthz", {})):
        connection.request(method, path, headers=headers)  # one reused connection throughout
        response = connection.getresponse()
        body = response.read()
        names = [name.lower() for name, _ in response.getheaders()]
        assert names.count("date") == 1 and names.count("server") == 1, (method, path, response.getheaders())
        lengths[method, path] = (response.getheader("Content-Length"), len(body))
    connection.close()
    got, _ = lengths["GET", "/v1/namespaces/a/tables/b"]
    assert lengths["HEAD", "/v1/namespaces/a/tables/b"] == (got, 0), "HEAD: the length a GET has, and no body"
    assert int(got) > 0


def test_a_cors_preflight_passes_without_a_token_and_trace_is_refused(shared_gate):
    url, _ = shared_gate
    before = len(_Upstream.seen)
    request = urllib.request.Request(f"{url}/v1/namespaces/a/tables/b", method="OPTIONS", headers={  # noqa: S310
        "Origin": "https://ui.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback test server
        assert response.status == 204
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        assert "POST" in response.headers["Access-Control-Allow-Methods"]
        assert "authorization" in response.headers["Access-Control-Allow-Headers"].lower()
    # The answer to the real request says the page may read it.
    request = urllib.request.Request(f"{url}/v1/config", headers={  # noqa: S310
        "Origin": "https://ui.example", "Authorization": f"Bearer {TOKENS['reader']}"})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback test server
        assert response.headers["Access-Control-Allow-Origin"] == "*"
    status, body = call(f"{url}/v1/config", "TRACE", TOKENS["writer"])
    assert status == 405 and TOKENS["writer"] not in json.dumps(body)
    assert len(_Upstream.seen) == before + 1, "OPTIONS and TRACE never reach the catalog"


def _raw_exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_raw_utf8_in_a_path_is_answered_and_a_percent_encoded_one_is_relayed_as_sent(shared_gate):
    url, running = shared_gate
    port = int(url.rsplit(":", 1)[1])
    raw = "/v1/namespaces/café/tables/t".encode()
    answer = _raw_exchange(port, b"GET " + raw + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-reader\r\n"
                                 b"Connection: close\r\n\r\n")
    assert answer.split(b" ", 2)[1] == b"400", answer[:200]  # an answer, not a dropped connection
    status, body = call(f"{url}/v1/namespaces/caf%C3%A9/tables/t", token=TOKENS["reader"])
    assert status == 200 and body["path"] == "/v1/namespaces/caf%C3%A9/tables/t"
    status, body = call(f"{url}/v1/namespaces/missing%C3%A9", token=TOKENS["reader"])
    assert status == 404 and body["error"]["type"] == "NoSuchNamespaceException"  # the catalog's answer
    assert call(f"{url}/healthz")[0] == 200
    assert not any("Traceback" in line for line in running.log), running.log


def test_dot_segments_are_refused_before_the_policy_could_be_misled(shared_gate):
    url, _ = shared_gate
    port = int(url.rsplit(":", 1)[1])
    for path in (b"/v1/namespaces/a/tables/b/plan/..", b"/v1/namespaces/a/tables/b/plan/%2e%2E",
                 b"/v1/namespaces/a/tables/b/plan/..;x", b"/v1/namespaces/a/./tables/b"):
        answer = _raw_exchange(port, b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-reader"
                                     b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        assert answer.startswith(b"HTTP/1.1 400 "), (path, answer[:200])
    # What the path alone says: cancelling a scan plan needs read, yet a catalog that resolved the dot segment would
    # drop the table.
    assert catalog_requests.route("DELETE", "/v1/namespaces/a/tables/b/plan/..", {}) == catalog_requests.Route(
        needs=(catalog_requests.Need("read", ("a",)),))


def test_the_gate_refuses_to_start_when_two_identities_tokens_hash_alike():
    same = hashlib.sha256(b"shared").hexdigest()
    config = {"listen_host": "127.0.0.1", "listen_port": 0, "upstream": "http://127.0.0.1:1",
              "identities": [{"name": "writer", "grants": {"*": ["read", "write"]}, "token_sha256": same},
                             {"name": "reader", "grants": {"*": ["read"]}, "token_sha256": same.upper()}]}
    done = support_gate.run_gate_once(config)
    assert done.returncode == 2 and "listening" not in done.stderr
    assert ("identities[1].token_sha256: identities 'writer' and 'reader' have the same catalog token" in done.stderr)
    assert "Traceback" not in done.stderr
    with pytest.raises(catalog_gate.ConfigError, match="'writer' and 'reader' have the same catalog token"):
        catalog_gate.load_config(config)


def test_the_gate_refuses_to_start_without_a_signing_key_of_32_bytes_or_with_a_bad_config():
    config = {"listen_port": 0, "upstream": "http://127.0.0.1:1", "identities": support_gate.identities(TOKENS)}
    done = support_gate.run_gate_once(config, signing_key=None)
    assert done.returncode == 2 and "CATALOG_GATE_SIGNING_KEY is not set" in done.stderr and "32 bytes" in done.stderr
    assert "Traceback" not in done.stderr
    with pytest.raises(catalog_gate.ConfigError, match="CATALOG_GATE_SIGNING_KEY has 9 bytes"):
        catalog_gate.signing_key_from({"CATALOG_GATE_SIGNING_KEY": "too-short"})
    with pytest.raises(catalog_gate.ConfigError) as info:
        catalog_gate.load_config({**config, "upstream": "https://catalog", "listen_port": 70000}, "gate.json")
    assert info.value.problems == ["listen_port: Input should be less than or equal to 65535",
                                   "upstream: 'https://catalog' must be http://host:port"]


def test_natively_the_gate_runs_from_the_project_on_loopback_with_its_signing_key_in_its_environment(tmp_path):
    from lakehouse_platform.services.catalog_gate import definition as gate_service
    from lakehouse_platform.services.context import ServiceContext
    from lakehouse_platform.services.plans import NativeHost

    spec = native_spec()
    host = NativeHost(home=tmp_path, artifact=None, python="/runtime/bin/python", code_root=tmp_path / "code")
    plan = gate_service.native.server(ServiceContext(spec, "catalog-gate"), host)
    assert plan.argv[:3] == ["/runtime/bin/python", "-m", "lakehouse_platform.runtime.catalog_gate"]
    assert plan.env["PYTHONPATH"] == str(tmp_path / "code"), "the stack's copy of the code, never a checkout"
    assert plan.env["CATALOG_GATE_SIGNING_KEY"] == "${secret:catalog-gate-signing-key}"
    config = json.loads(plan.files[str(tmp_path / "catalog-gate.json")])
    assert config["listen_host"] == "127.0.0.1"
    assert all(i["token_sha256"].startswith("${sha256:catalog-token-") for i in config["identities"])
    assert "secret:" not in json.dumps(config), "no secret in the gate's config file"
    assert catalog_gate.load_config({**config, "identities": support_gate.identities(TOKENS)}).listen_backlog >= 1024


def token_request(url: str, form: dict[str, str], basic: tuple[str, str] | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
    return call(f"{url}/v1/oauth/tokens", "POST", body=urllib.parse.urlencode(form).encode(), headers=headers)


def test_the_client_credentials_flow_issues_a_token_that_carries_its_identitys_role():
    with gate() as url:
        before = len(_Upstream.seen)
        issued = {}
        for how, form, basic in (
                ("form", {"grant_type": "client_credentials", "client_id": "reader", "client_secret": "t-reader",
                          "scope": "catalog"}, None),
                ("secret alone", {"grant_type": "client_credentials", "client_secret": "t-writer"}, None),
                ("basic", {"grant_type": "client_credentials", "scope": "catalog"}, ("platform", "t-platform"))):
            status, body = token_request(url, form, basic)
            assert status == 200, (how, body)
            assert body["token_type"] == "bearer" and body["expires_in"] == 3600
            assert body["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
            issued[how] = body["access_token"]
        assert len(_Upstream.seen) == before, "the token endpoint is the gate's own: never forwarded"
        table = f"{url}/v1/namespaces/sales/tables/orders"
        assert call(table, token=issued["form"])[0] == 200
        assert call(table, "POST", issued["form"], b"{}")[0] == 403  # the reader's token cannot write
        assert call(table, "POST", issued["secret alone"], b"{}")[0] == 200
        assert call(table, "POST", issued["basic"], b"{}")[0] == 200
        metrics = metrics_of(url)
    assert metric(metrics, "lakehouse_catalog_gate_authenticated_total", identity="reader", credential="issued") == 2
    assert metric(metrics, "lakehouse_catalog_gate_requests_total", identity="reader", decision="token_issued") == 1


def test_a_wrong_credential_or_grant_is_refused_in_oauth_form(shared_gate):
    url, _ = shared_gate
    for form, basic, status_wanted, error in (
            ({"grant_type": "client_credentials", "client_id": "writer", "client_secret": "t-reader"}, None,
             401, "invalid_client"),
            ({"grant_type": "client_credentials", "client_id": "nobody", "client_secret": "t-reader"}, None,
             401, "invalid_client"),
            ({"grant_type": "client_credentials", "client_secret": "wrong"}, None, 401, "invalid_client"),
            ({"grant_type": "client_credentials"}, ("writer", "wrong"), 401, "invalid_client"),
            ({"grant_type": "client_credentials"}, None, 401, "invalid_client"),
            ({"grant_type": "password", "username": "writer", "password": "t-writer"}, None, 400,
             "unsupported_grant_type"),
            ({"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": "forged",
              "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}, None, 400, "invalid_request")):
        status, body = token_request(url, form, basic)
        assert (status, body.get("error")) == (status_wanted, error), (form, basic, body)
    assert call(f"{url}/v1/oauth/tokens", "GET")[0] == 405


def test_the_token_exchange_refreshes_a_current_token_and_an_expired_one_with_the_credential(shared_gate):
    import jwt

    exchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    access = "urn:ietf:params:oauth:token-type:access_token"
    url, _ = shared_gate
    table = f"{url}/v1/namespaces/sales/tables/orders"
    # Iceberg Java's refresh of a static token: the catalog token as the subject.
    status, body = token_request(url, {"grant_type": exchange, "subject_token": "t-writer",
                                       "subject_token_type": access, "scope": "catalog"})
    assert status == 200
    first = body["access_token"]
    claims = jwt.decode(first, options={"verify_signature": False})
    assert claims["sub"] == "writer" and claims["exp"] - claims["iat"] == 3600  # Java reads exp
    # ...and of an issued one.
    status, body = token_request(url, {"grant_type": exchange, "subject_token": first, "subject_token_type": access})
    assert status == 200 and call(table, "POST", body["access_token"], b"{}")[0] == 200
    # An expired token is refused as a bearer and as a subject; with the client's credential
    # (Iceberg Java after expiry: HTTP Basic) it is exchanged for a fresh one.
    expired = jwt.encode({"iss": "lakehouse-catalog-gate", "sub": "writer", "iat": 1, "exp": 2},
                         support_gate.SIGNING_KEY, algorithm="HS256")
    status, body = call(table, token=expired)
    assert status == 401 and body["error"]["type"] == "NotAuthorizedException"
    assert token_request(url, {"grant_type": exchange, "subject_token": expired, "subject_token_type": access}
                         )[0] == 400
    status, body = token_request(url, {"grant_type": exchange, "subject_token": expired,
                                       "subject_token_type": access}, basic=("writer", "t-writer"))
    assert status == 200 and call(table, "POST", body["access_token"], b"{}")[0] == 200
    # A token signed with another key is nobody's.
    forged = jwt.encode({"iss": "lakehouse-catalog-gate", "sub": "platform", "iat": 1, "exp": 2 ** 33},
                        "another-key-of-at-least-32-bytes-long", algorithm="HS256")
    assert call(table, token=forged)[0] == 401


# -- docker, under Pulumi mocks ------------------------------------------------------------------------------


def test_lab_gate_holds_token_hashes_and_clients_reach_the_fixture_only_through_it(lab):
    config = json.loads(uploads(lab, "catalog-gate")["/etc/lakehouse/catalog-gate.json"])
    assert config["upstream"] == "http://rest-fixture:8181"
    everything = {"*": ["read", "write", "manage"]}
    assert {i["name"]: i["grants"] for i in config["identities"]} == {"platform": everything, "writer": everything,
                                                                      "reader": {"*": ["read"]}}
    assert all(re.fullmatch(r"[0-9a-f]{64}", i["token_sha256"]) for i in config["identities"])
    text = json.dumps(config)
    assert "lab-reader-catalog-token" not in text and "lab-writer-catalog-token" not in text
    host = lab.outputs["profiles"]["host"]
    assert host["pyiceberg"]["uri"] == "http://localhost:8182"
    assert "8181" not in json.dumps(host)


def test_lab_gate_runs_in_the_operations_image_with_its_signing_key_only_in_its_environment(lab):
    image = lab.named("operations-image")  # the one operations image, built once for every operations container
    assert image.inputs["build"]["dockerfile"].endswith("lakehouse_platform/runtime/image/Dockerfile")
    assert image.inputs["imageName"] == f"lakehouse/operations:{PLATFORM_VERSION}"
    container = lab.named("catalog-gate")
    assert container.inputs["command"] == ["python", "-m", "lakehouse_platform.runtime.catalog_gate", "--config",
                                           "/etc/lakehouse/catalog-gate.json"]
    assert "CATALOG_GATE_SIGNING_KEY=lab-catalog-gate-access-token-signing-key" in reveal(container.inputs["envs"])
    assert "signing" not in json.dumps(reveal(container.inputs["uploads"]))
    assert SECRET_KEY in json.dumps(container.inputs["envs"]), "the key is a Pulumi secret"


def test_evaluating_the_program_loads_none_of_the_gates_server_libraries():
    """The program only names the gate's signing-key variable: aiohttp, uvloop, jwt and the rest are the gate's."""
    code = ("import sys\n"
            "from tests.support.harness import run_program\n"
            "from tests.support.stacks import stack_platform\n"
            "run_program('lab', stack_platform('lab'))\n"
            "print(sorted(m for m in ('aiohttp', 'uvloop', 'jwt', 'prometheus_client', 'yarl') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "[]"


# -- grants per namespace -------------------------------------------------------------------------------------

#: A team's identity: writes shop, reads finance, nothing else (the access table the spec renders for grants
#: ``{shop: [read, write], finance: [read]}`` with shop and finance known).
ETL_TOKEN = "t-etl"
ETL_GRANTS = {"shop": ["read", "write"], "finance": ["read"], "*": []}


@pytest.fixture(scope="module")
def team_gate() -> Iterator[str]:
    tokens = {**TOKENS, "etl": ETL_TOKEN}
    with gate_process(identities=support_gate.identities(tokens, {"etl": ETL_GRANTS})) as (url, _):
        yield url


def test_the_gate_decides_each_request_by_the_namespace_it_touches_and_the_catalog_never_sees_a_refused_one(
        team_gate):
    url = team_gate
    commit, create = b'{"requirements": [], "updates": []}', b'{"requirements": [{"type": "assert-create"}]}'

    def change(namespace: list[str], creates: bool = False) -> dict:
        return {"identifier": {"namespace": namespace, "name": "t"},
                "requirements": [{"type": "assert-create"}] if creates else [], "updates": []}

    def transaction(*changes: dict) -> bytes:
        return json.dumps({"table-changes": list(changes)}).encode()

    rename = json.dumps({"source": {"namespace": ["shop"], "name": "a"},
                         "destination": {"namespace": ["shop"], "name": "b"}}).encode()
    cases = [  # (method, path, body, expected status)
        ("GET", "/v1/config", None, 200),
        ("GET", "/v1/namespaces/shop", None, 200),
        ("HEAD", "/v1/namespaces/finance", None, 200),
        ("GET", "/v1/namespaces/shop/tables", None, 200),
        ("GET", "/v1/namespaces/finance/tables/ledger", None, 200),
        ("POST", "/v1/namespaces/finance/tables/ledger/metrics", b"{}", 200),  # a scan report: read
        ("POST", "/v1/namespaces/shop/tables/orders", commit, 200),
        ("POST", "/v1/namespaces/shop%1Feu/tables/orders", commit, 200),  # nested: follows shop
        ("POST", "/v1/transactions/commit", transaction(change(["shop"]), change(["shop", "eu"])), 200),
        ("GET", "/v1/namespaces/made_at_run_time", None, 403),  # '*' grants it nothing
        ("GET", "/v1/namespaces/shopping/tables", None, 403),
        ("POST", "/v1/namespaces/finance/tables/ledger", commit, 403),
        ("POST", "/v1/namespaces/finance%1Fq/tables/ledger", commit, 403),
        ("POST", "/v1/namespaces/shop/tables/orders", create, 403),  # creating a table is manage
        ("POST", "/v1/namespaces/shop/tables", b'{"name": "new"}', 403),
        ("DELETE", "/v1/namespaces/shop/tables/orders", None, 403),
        ("POST", "/v1/namespaces/shop/properties", b"{}", 403),
        ("DELETE", "/v1/namespaces/shop", None, 403),
        ("POST", "/v1/namespaces", b'{"namespace": ["shop_two"]}', 403),
        ("POST", "/v1/tables/rename", rename, 403),
        ("POST", "/v1/transactions/commit", transaction(change(["shop"]), change(["finance"])), 403),
        ("POST", "/v1/transactions/commit", transaction(change(["shop"], creates=True)), 403),
        ("POST", "/v1/transactions/commit", b"not json", 400),
        ("POST", "/v1/transactions/commit", b'{"table-changes": [{"identifier": {"name": "t"}}]}', 400),
        ("GET", "/v1/shop/namespaces", None, 403),  # a path the gate does not know: refused, never forwarded
        ("GET", "/v1/namespaces/shop/tables/orders/snapshots", None, 403),
        ("PUT", "/v1/namespaces/shop/tables/orders", commit, 403),
    ]
    seen = len(_Upstream.seen)
    observed, forwarded = [], 0
    for method, path, body, _ in cases:
        status, answer = call(url + path, method, ETL_TOKEN, body)
        observed.append((method, path, body, status))
        forwarded += status == 200
        if status == 403:
            assert answer["error"]["type"] == "ForbiddenException", answer
    assert [(m, p, b, s) for (m, p, b, s) in observed] == cases
    assert len(_Upstream.seen) - seen == forwarded, "a refused request never reaches the catalog"
    status, answer = call(f"{url}/v1/namespaces/finance/tables/ledger", "POST", ETL_TOKEN, commit)
    assert answer["error"]["message"] == ("identity etl may not write on finance (POST /v1/namespaces/finance/tables/"
                                          "ledger); its grants allow read there")


def test_a_namespace_listing_shows_each_identity_only_the_namespaces_it_may_read(team_gate):
    url = team_gate
    listed = {who: call(f"{url}/v1/namespaces", token=token)[1]["namespaces"]
              for who, token in (("etl", ETL_TOKEN), ("reader", TOKENS["reader"]))}
    assert listed == {"etl": [["shop"], ["shop", "eu"], ["finance"]], "reader": NAMESPACES}
    assert call(f"{url}/v1/namespaces?parent=finance", token=ETL_TOKEN)[0] == 200  # the children of a namespace it reads (they follow its top level): as the catalog says
    assert call(f"{url}/v1/namespaces?parent=made_at_run_time", token=ETL_TOKEN)[0] == 403


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_client_that_expects_100_continue_is_asked_for_its_body_and_a_refused_one_is_answered_at_once(team_gate):
    port = int(team_gate.rsplit(":", 1)[1])
    body = b'{"requirements": [], "updates": []}'

    def head(token: str, path: str) -> bytes:
        return (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n"
                ).encode()

    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:  # the timeout: a stall fails the test
        sock.sendall(head(ETL_TOKEN, "/v1/namespaces/shop/tables/orders"))
        interim = _read_until(sock, b"\r\n\r\n")
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
        sock.sendall(body)
        final = _read_until(sock, b"}")
    assert final.startswith(b"HTTP/1.1 200 "), final[:200]
    assert b'"body": "{\\"requirements\\": [], \\"updates\\": []}"' in final, final  # the whole body went on
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(head(ETL_TOKEN, "/v1/namespaces/finance/tables/ledger"))
        refused = _read_until(sock, b"}")
    assert refused.startswith(b"HTTP/1.1 403 "), refused[:200]  # no 100 first: the body is never asked for
    assert b"connection: close" in refused.lower()
    form = b"grant_type=client_credentials&client_id=etl&client_secret=t-etl"
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"POST /v1/oauth/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded"
                     + f"\r\nContent-Length: {len(form)}\r\nExpect: 100-continue\r\n\r\n".encode())
        assert _read_until(sock, b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(form)
        assert _read_until(sock, b"}").startswith(b"HTTP/1.1 200 ")
