"""Governance, offline: identities per use, the catalog gate (a real server on loopback), the platform's TLS
certificates (a real TLS handshake), Trino's password file and access rules, the profiles per identity."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import http.server
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import stack_platform

from infra.config import ConfigError, load_platform
from infra.operations import catalog_gate
from infra.resources import certificate
from infra.services import profiles
from infra.services.secrets import pbkdf2_hash
from infra.services.trino import config as trino

P = "lakehouse:platform"


def native():
    return load_platform(stack_platform("native"))


# -- identities ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda p: p.setdefault("identities", {}).update({"reader": {"access_key": "reader-access-key",
                                                                "actions": ["Read", "List", "Write"],
                                                                "secret_config_key": "s3ReaderSecretKey"}}),
     f"{P}.governance.reader: identity 'reader' has Write; the read-only identity may hold only Read and List"),
    (lambda p: p.setdefault("identities", {}).update({"writer": {"access_key": "writer-access-key",
                                                                "actions": ["Admin", "Read", "Write", "List"],
                                                                "secret_config_key": "s3WriterSecretKey"}}),
     f"{P}.governance.writer: identity 'writer' has actions Admin, Read, Write, List, which make it a platform; a "
     "writer needs Write and not Admin"),
    (lambda p: p.update({"governance": {"reader": "analysts"}}),
     f"{P}.governance.reader: 'analysts' is not an identity; allowed: platform, writer, reader"),
    (lambda p: p.setdefault("identities", {}).update({"BI_Team": {"access_key": "bi-access-key", "actions": ["Read"],
                                                                 "secret_config_key": "s3BiSecretKey"}}),
     f"{P}.identities.BI_Team: 'BI_Team' is not an identity name: lowercase letters, digits and -, 2 to 31 "
     "characters, starting with a letter"),
    (lambda p: p["services"].update({"catalog-gate": {"enabled": False}}),
     f"{P}.services.catalog-gate.enabled: rest-fixture has no authentication of its own and catalog-gate is what "
     "refuses clients without a valid token; keep catalog-gate enabled while rest-fixture is"),
])
def test_an_identity_that_would_fail_open_is_refused(mutate, expected):
    platform = stack_platform("native")
    mutate(platform)
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source="Pulumi.native.yaml")
    assert info.value.errors == [expected]


def test_each_use_has_its_own_identity_and_role():
    spec = native()
    assert {name: spec.role_of_identity(name) for name in spec.identities} == {
        "platform": "platform", "writer": "writer", "reader": "reader"}
    assert spec.platform_identity == "platform"
    assert (spec.governance.writer, spec.governance.reader) == ("writer", "reader")


# -- the catalog gate ------------------------------------------------------------------------------------


class _Upstream(http.server.BaseHTTPRequestHandler):
    """A stand-in catalog: answers 200 with what it received (so the test sees what the gate forwarded)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.dumps({"method": self.command, "path": self.path, "body": self.rfile.read(length).decode(),
                           "authorization": self.headers.get("Authorization")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = do_HEAD = _answer


@contextmanager
def serving(server) -> Iterator[int]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


TOKENS = {"platform": "t-platform", "writer": "t-writer", "reader": "t-reader"}


@contextmanager
def gate(upstream_port: int | None = None) -> Iterator[str]:
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    port = upstream_port or upstream.server_address[1]
    config = {"listen_host": "127.0.0.1", "listen_port": 0, "upstream": f"http://127.0.0.1:{port}",
              "identities": [{"name": n, "role": n, "token_sha256": hashlib.sha256(t.encode()).hexdigest()}
                             for n, t in TOKENS.items()]}
    with serving(upstream), serving(catalog_gate.serve(config)) as gate_port:
        yield f"http://127.0.0.1:{gate_port}"


def call(url: str, method: str = "GET", token: str | None = None, body: bytes | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, method=method, data=body)  # noqa: S310 - loopback test server
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback test server
            text = response.read().decode()
            return response.status, json.loads(text) if text.startswith("{") else {"text": text}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode() or "{}")


def test_gate_refuses_missing_and_unknown_tokens_before_the_catalog_sees_them():
    with gate() as url:
        for token in (None, "not-a-token", "Bearer"):
            status, body = call(f"{url}/v1/config", token=token)
            assert status == 401 and body["error"]["type"] == "NotAuthorizedException", (token, status, body)
        status, body = call(f"{url}/v1/namespaces", "POST", token=None, body=b'{"namespace": ["x"]}')
        assert status == 401


def test_gate_lets_readers_read_and_refuses_every_write_of_theirs():
    with gate() as url:
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


def test_gate_forwards_writers_and_the_platform_unchanged():
    with gate() as url:
        for who in ("writer", "platform"):
            status, body = call(f"{url}/v1/namespaces/sales/tables/orders", "POST", TOKENS[who], b'{"updates": []}')
            assert status == 200 and body["method"] == "POST" and body["body"] == '{"updates": []}'


def test_gate_says_502_when_the_catalog_is_down_and_counts_what_it_decided():
    with gate(upstream_port=_free_port()) as url:
        status, body = call(f"{url}/v1/config", token=TOKENS["writer"])
        assert status == 502 and body["error"]["type"] == "ServiceUnavailableException"
        call(f"{url}/v1/config")  # unauthenticated
        status, _ = call(f"{url}/healthz")
        assert status == 200  # the gate itself, no token, never the catalog
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:  # noqa: S310
            metrics = response.read().decode()
    assert 'lakehouse_catalog_gate_requests_total{identity="writer",decision="allowed"} 1' in metrics
    assert 'lakehouse_catalog_gate_requests_total{identity="none",decision="unauthenticated"} 1' in metrics
    assert "lakehouse_catalog_gate_upstream_errors_total 1" in metrics


def test_gate_measures_commit_latency_by_kind():
    assert catalog_gate.kind_of("POST", "/v1/namespaces/a/tables/b") == "commit"
    assert catalog_gate.kind_of("POST", "/v1/transactions/commit") == "commit"
    assert catalog_gate.kind_of("POST", "/v1/namespaces/a/tables") == "create_table"
    assert catalog_gate.kind_of("GET", "/v1/namespaces/a/tables/b") == "load_table"
    with gate() as url:
        call(f"{url}/v1/namespaces/a/tables/b", "POST", TOKENS["writer"], b"{}")
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:  # noqa: S310
            metrics = response.read().decode()
    assert 'lakehouse_catalog_request_duration_seconds_count{kind="commit"} 1' in metrics
    assert 'lakehouse_catalog_responses_total{kind="commit",status="2xx"} 1' in metrics


def test_the_gate_is_standard_library_only():
    """The docker target runs the gate by path in a plain Python image: it must import nothing of the project."""
    source = catalog_gate.__file__
    done = subprocess.run([sys.executable, "-I", "-c", f"import runpy; runpy.run_path({source!r}, run_name='x')"],
                          capture_output=True, text=True, timeout=30, cwd="/")
    assert done.returncode == 0, done.stderr


# -- TLS certificates --------------------------------------------------------------------------------------


def test_a_client_verifies_the_issued_certificate_and_nothing_else(tmp_path):
    issued = certificate.issue("127.0.0.1", ["127.0.0.1", "localhost"], 30)
    assert issued["pem"] == issued["key_pem"] + issued["cert_pem"]
    pem, cert = tmp_path / "server.pem", tmp_path / "ca.pem"
    pem.write_text(issued["pem"])
    cert.write_text(issued["cert_pem"])
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(pem)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept_one() -> None:
        connection, _ = listener.accept()
        try:
            with server_context.wrap_socket(connection, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError):
            pass

    for host, trusted, should_pass in (("127.0.0.1", cert, True), ("localhost", cert, True),
                                       ("127.0.0.1", None, False)):
        thread = threading.Thread(target=accept_one, daemon=True)
        thread.start()
        context = ssl.create_default_context(cafile=str(trusted) if trusted else None)
        if trusted is None:
            context = ssl.create_default_context()
            context.load_verify_locations(cadata=certificate.issue("other", ["127.0.0.1"], 30)["cert_pem"])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                    context.wrap_socket(raw, server_hostname=host) as tls:
                tls.send(b"x")
                verified = True
        except ssl.SSLCertVerificationError:
            verified = False
        thread.join(5)
        assert verified is should_pass, (host, trusted)
    listener.close()


def test_certificate_provider_keeps_its_certificate_and_renews_it_near_expiry():
    provider = certificate.CertificateProvider()
    props = {"common_name": "127.0.0.1", "hosts": ["127.0.0.1"], "days": 90}
    created = provider.create(dict(props)).outs
    assert provider.diff("id", created, dict(props)).changes is False  # a second `up` changes nothing
    assert provider.diff("id", created, {**props, "hosts": ["127.0.0.1", "trino"]}).replaces == ["hosts"]
    near = dict(created, not_after=(dt.datetime.now(dt.UTC) + dt.timedelta(days=5)).isoformat())
    assert provider.diff("id", near, dict(props)).replaces == ["days"]
    assert [key for key, _ in certificate.problems({"common_name": "", "hosts": [], "days": 0})] == [
        "common_name", "hosts", "days"]


def test_serialized_certificate_provider_loads_without_the_repository_on_the_path():
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(certificate.CertificateProvider())
    assert blob == serialize_provider(certificate.CertificateProvider()), "deterministic, or every up shows a diff"
    # The project is installed editable in the venv: block it, as the engine's provider process may not have it.
    code = ("import base64, sys, dill\n"
            "sys.modules['infra'] = None\n"
            "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
            "print(type(p).__name__, p.create({'common_name': 'x', 'hosts': ['127.0.0.1'], 'days': 1}).id[:4] != '')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], input=blob, cwd="/", env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["CertificateProvider", "True"]
    assert base64.b64decode(blob)[:80].count(b"infra.resources") == 0


# -- Trino -------------------------------------------------------------------------------------------------


def trino_verifies(password: str, stored: str) -> bool:
    """Trino's check of a PBKDF2 password-file entry (EncryptionUtil.doesPBKDF2PasswordMatch): SHA-1 HMAC,
    ``iterations:salt-hex:hash-hex``, at least 1000 iterations."""
    iterations, salt, digest = stored.split(":")
    assert int(iterations) >= 1000 and salt == salt.lower() and digest == digest.lower()
    derived = hashlib.pbkdf2_hmac("sha1", password.encode(), bytes.fromhex(salt), int(iterations),
                                  dklen=len(bytes.fromhex(digest)))
    return derived == bytes.fromhex(digest)


def test_password_file_hashes_are_trinos_pbkdf2_and_stable():
    first = pbkdf2_hash("trino-password-reader", "s3cret")
    assert first == pbkdf2_hash("trino-password-reader", "s3cret"), "stable: an unchanged password restarts nothing"
    assert first != pbkdf2_hash("trino-password-writer", "s3cret"), "two users with one password hash differently"
    assert trino_verifies("s3cret", first) and not trino_verifies("wrong", first)
    assert trino.password_file(native()) == "".join(
        f"{name}:${{pbkdf2:trino-password-{name}}}\n" for name in ("platform", "writer", "reader"))


def test_readers_reach_only_the_read_only_catalog_and_its_credentials_cannot_write():
    spec = native()
    assert trino.catalogs(spec) == {"fixture": ("rest-fixture", "writer"), "fixture_ro": ("rest-fixture", "reader")}
    assert trino.access_rules(spec) == {"catalogs": [
        {"user": "platform|writer", "catalog": "fixture", "allow": "all"},
        {"user": "reader", "catalog": "fixture_ro", "allow": "read-only"},
        {"catalog": "system", "allow": "read-only"},
    ]}
    from infra.services import ServiceContext

    files = trino.catalog_files(ServiceContext(spec, "trino"))
    assert "oauth2.token=${ENV:CATALOG_TOKEN_READER}" in files["fixture_ro.properties"]
    assert "s3.aws-secret-key=${ENV:S3_SECRET_KEY_READER}" in files["fixture_ro.properties"]
    assert "READER" not in files["fixture.properties"]
    env = trino.secret_env(ServiceContext(spec, "trino"))
    assert env["S3_SECRET_KEY_READER"] == "${secret:s3-secret-key-reader}"
    assert env["S3_ACCESS_KEY_READER"] == "reader-access-key"
    assert "S3_SECRET_KEY" not in env, "no engine gets the platform's admin key"


def test_profiles_fill_each_identity_and_refuse_a_missing_value():
    spec = native()
    credentials = {"identities": {"reader": {"s3_access_key": "r", "s3_secret_key": "rs", "catalog_token": "rt",
                                             "trino_user": "reader", "trino_password": "rp"}}}
    filled = profiles.fill(profiles.pyiceberg(spec), credentials, "reader")
    assert (filled["token"], filled["s3.access-key-id"], filled["s3.secret-access-key"]) == ("rt", "r", "rs")
    assert filled["uri"].endswith(":8182")  # through the gate
    with pytest.raises(KeyError, match="no credentials for identity 'writer'"):
        profiles.fill(profiles.pyiceberg(spec), credentials, "writer")
    with pytest.raises(KeyError, match="catalog_token"):
        profiles.fill({"token": "{catalog_token}"}, {"identities": {"x": {}}}, "x")
