"""The platform's TLS certificates (lakehouse_platform/resources/certificate.py): a real TLS handshake verifies the issued certificate
and nothing else; the provider keeps its certificate, renews it near expiry, and loads without the repository."""

from __future__ import annotations

import base64
import datetime as dt
import os
import socket
import ssl
import subprocess
import sys
import threading

from lakehouse_platform.resources import certificate
from tests.support import REPO_ROOT


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
    # New provider code (an upgrade): an update that keeps the key and the certificate.
    olds, news = {**created, "__provider": "old code"}, {**props, "__provider": "new code"}
    code_only = provider.diff("id", olds, news)
    assert code_only.changes is True and code_only.replaces == []
    updated = provider.update("id", olds, {**news, **dict.fromkeys(certificate.ISSUED)}).outs
    assert {k: updated[k] for k in certificate.ISSUED} == {k: created[k] for k in certificate.ISSUED}


def test_serialized_certificate_provider_loads_by_reference_in_a_provider_process():
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(certificate.CertificateProvider())
    assert blob == serialize_provider(certificate.CertificateProvider()), "deterministic, or every up shows a diff"
    code = ("import base64, sys, dill\n"
            "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
            "print(type(p).__name__, p.create({'common_name': 'x', 'hosts': ['127.0.0.1'], 'days': 1}).id[:4] != '')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], input=blob, cwd="/", env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["CertificateProvider", "True"]
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"
