"""The catalog gate: bearer tokens in front of a REST catalog that has no authentication of its own (governance).

The Iceberg REST fixture answers anyone, and it writes every metadata file with its own store keys: a
client holding only read-only store keys can still evolve a schema, create or drop a table, or expire
every snapshot through it. The gate is the only address clients get for that catalog (the profiles and
Trino's catalog files point at it); it checks every request before the catalog sees it:

- no ``Authorization: Bearer <token>``, or a token no identity holds: **401** (never served, not even
  ``/v1/config``);
- an identity whose role is ``reader``: ``GET``/``HEAD`` and the read-only ``POST``s (scan metrics
  reports, server-side scan planning) pass; any other request (commits, creates, drops, renames,
  namespace changes) is **403**;
- ``platform`` and ``writer`` identities: everything passes.

Tokens are never stored: the config holds the sha256 of each identity's token. The gate forwards the
request without the ``Authorization`` header (the catalog does not need it). When the catalog does not
answer, the gate says **502** in the Iceberg error form (clients treat it as retryable, and the exporter
reports the catalog down). ``GET /healthz`` (the gate itself) and ``GET /metrics`` (its counters, in
Prometheus' text format) need no token and never reach the catalog.

Standard library only and no import of the project, so the docker target runs it by path in a plain
Python image. ``python catalog_gate.py --config gate.json``; config::

    {"listen_host": "127.0.0.1", "listen_port": 8182, "upstream": "http://127.0.0.1:8181",
     "identities": [{"name": "reader", "role": "reader", "token_sha256": "<hex>"}, ...]}
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import re
import signal
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: Requests a reader may make: reads, plus POSTs that change nothing (scan metrics reports, scan planning).
READ_ONLY_POST = re.compile(r"^/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+/(?:metrics|plan(?:/[^/]+)?|tasks)$")
READ_METHODS = frozenset({"GET", "HEAD"})
#: What a forwarded request is, for its latency: a commit (the catalog's atomic swap) above all.
KINDS = (
    ("commit", "POST", re.compile(r"^/v1/(?:[^/]+/)?(?:namespaces/[^/]+/tables/[^/]+|transactions/commit)$")),
    ("create_table", "POST", re.compile(r"^/v1/(?:[^/]+/)?namespaces/[^/]+/tables$")),
    ("load_table", "GET", re.compile(r"^/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+$")),
    ("config", "GET", re.compile(r"^/v1/config$")),
)
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def kind_of(method: str, path: str) -> str:
    for kind, kind_method, pattern in KINDS:
        if method == kind_method and pattern.match(path):
            return kind
    return "other"
#: Headers that describe one connection, not the message: never forwarded.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
                        "transfer-encoding", "upgrade", "authorization", "host", "content-length"})
ROLES = frozenset({"platform", "writer", "reader"})


def may(role: str, method: str, path: str) -> bool:
    """Whether an identity of ``role`` may make this request (the whole policy, in one function)."""
    if role in ("platform", "writer"):
        return True
    return method in READ_METHODS or (method == "POST" and READ_ONLY_POST.match(path) is not None)


class Gate:
    """The gate's configuration and counters (shared by every handler thread)."""

    def __init__(self, config: dict[str, Any]):
        upstream = urlsplit(config["upstream"])
        if upstream.scheme != "http" or not upstream.hostname:
            raise ValueError(f"upstream {config['upstream']!r} must be http://host:port")
        self.upstream_host = upstream.hostname
        self.upstream_port = upstream.port or 80
        self.timeout_s = float(config.get("timeout_s", 60))
        self.identities: dict[str, tuple[str, str]] = {}  # sha256(token) -> (identity, role)
        for entry in config["identities"]:
            if entry["role"] not in ROLES:
                raise ValueError(f"identity {entry['name']}: role {entry['role']!r} is not one of {sorted(ROLES)}")
            self.identities[entry["token_sha256"].lower()] = (entry["name"], entry["role"])
        self.counts: Counter[tuple[str, str]] = Counter()
        self.upstream_errors = 0
        # kind -> (bucket counts, sum, count): the catalog's latency as the gate sees it (commit latency).
        self.latency: dict[str, tuple[list[int], float, int]] = {}
        self.responses: Counter[tuple[str, str]] = Counter()  # (kind, status class)
        self.lock = threading.Lock()

    def observe(self, kind: str, seconds: float, status: int) -> None:
        with self.lock:
            buckets, total, count = self.latency.get(kind, ([0] * len(BUCKETS), 0.0, 0))
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    buckets[index] += 1
            self.latency[kind] = (buckets, total + seconds, count + 1)
            self.responses[(kind, f"{status // 100}xx")] += 1

    def who(self, authorization: str | None) -> tuple[str, str] | None:
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization[len("Bearer "):].strip()
        return self.identities.get(hashlib.sha256(token.encode()).hexdigest())

    def count(self, identity: str, decision: str) -> None:
        with self.lock:
            self.counts[(identity, decision)] += 1

    def metrics(self) -> str:
        lines = ["# HELP lakehouse_catalog_gate_requests_total Requests the catalog gate decided, by identity.",
                 "# TYPE lakehouse_catalog_gate_requests_total counter"]
        with self.lock:
            for (identity, decision), n in sorted(self.counts.items()):
                labels = f'identity="{identity}",decision="{decision}"'
                lines.append(f"lakehouse_catalog_gate_requests_total{{{labels}}} {n}")
            lines += ["# HELP lakehouse_catalog_gate_upstream_errors_total Requests the catalog did not answer.",
                      "# TYPE lakehouse_catalog_gate_upstream_errors_total counter",
                      f"lakehouse_catalog_gate_upstream_errors_total {self.upstream_errors}",
                      "# HELP lakehouse_catalog_request_duration_seconds The catalog's answer time, by request kind "
                      "(commit: the atomic swap), as its gate measures it.",
                      "# TYPE lakehouse_catalog_request_duration_seconds histogram"]
            for kind, (buckets, total, count) in sorted(self.latency.items()):
                for bound, n in zip(BUCKETS, buckets, strict=True):
                    lines.append(f'lakehouse_catalog_request_duration_seconds_bucket{{kind="{kind}",le="{bound}"}} {n}')
                lines += [f'lakehouse_catalog_request_duration_seconds_bucket{{kind="{kind}",le="+Inf"}} {count}',
                          f'lakehouse_catalog_request_duration_seconds_sum{{kind="{kind}"}} {total}',
                          f'lakehouse_catalog_request_duration_seconds_count{{kind="{kind}"}} {count}']
            lines += ["# HELP lakehouse_catalog_responses_total The catalog's answers through the gate, by kind and "
                      "status class.", "# TYPE lakehouse_catalog_responses_total counter"]
            for (kind, status), n in sorted(self.responses.items()):
                lines.append(f'lakehouse_catalog_responses_total{{kind="{kind}",status="{status}"}} {n}')
        return "\n".join(lines) + "\n"


def error_body(code: int, kind: str, message: str) -> bytes:
    """An Iceberg REST ``ErrorResponse``."""
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()


class Handler(BaseHTTPRequestHandler):
    """One request: decide, then forward or refuse."""

    protocol_version = "HTTP/1.1"
    server_version = "lakehouse-catalog-gate"
    gate: Gate  # set on the subclass the server is built with

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: refusals are logged by ``refuse``; successful requests are counted, not logged."""

    def _body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def _send(self, code: int, body: bytes, content_type: str = "application/json",
              extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def refuse(self, code: int, identity: str, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        sys.stderr.write(f"[catalog-gate {stamp}] {code} {identity} {self.command} {self.path.split('?')[0]}\n")
        kind = "NotAuthorizedException" if code == 401 else "ForbiddenException"
        self._send(code, error_body(code, kind, message), extra={"WWW-Authenticate": "Bearer"} if code == 401 else None)

    def handle_any(self) -> None:
        gate = self.gate
        path = self.path.split("?", 1)[0]
        body = self._body()
        if path == "/healthz" and self.command in READ_METHODS:
            return self._send(200, b"ok\n", "text/plain")
        if path == "/metrics" and self.command == "GET":
            return self._send(200, gate.metrics().encode(), "text/plain; version=0.0.4")
        found = gate.who(self.headers.get("Authorization"))
        if found is None:
            gate.count("none", "unauthenticated")
            return self.refuse(401, "-", "no or unknown credentials: send Authorization: Bearer <your identity's "
                                         "catalog token> (stack output credentials.identities)")
        identity, role = found
        if not may(role, self.command, path):
            gate.count(identity, "refused")
            return self.refuse(403, identity, f"identity {identity} ({role}) may not {self.command} {path}")
        gate.count(identity, "allowed")
        self.forward(body)

    def forward(self, body: bytes | None) -> None:
        gate = self.gate
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if body is not None:
            headers["Content-Length"] = str(len(body))
        # A fresh connection per request: a commit is never resent on a connection the catalog had closed.
        connection = http.client.HTTPConnection(gate.upstream_host, gate.upstream_port, timeout=gate.timeout_s)
        started = time.perf_counter()
        try:
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            gate.observe(kind_of(self.command, self.path.split("?", 1)[0]), time.perf_counter() - started,
                         response.status)
        except (OSError, http.client.HTTPException) as exc:
            with gate.lock:
                gate.upstream_errors += 1
            return self._send(502, error_body(502, "ServiceUnavailableException",
                                              f"the catalog behind the gate did not answer: {exc}"))
        finally:
            connection.close()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any


def serve(config: dict[str, Any]) -> ThreadingHTTPServer:
    """A gate server bound to ``listen_host:listen_port`` (not started)."""
    handler = type("BoundHandler", (Handler,), {"gate": Gate(config)})
    server = ThreadingHTTPServer((config.get("listen_host", "127.0.0.1"), int(config["listen_port"])), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="catalog_gate.py", description="bearer-token gate in front of a REST catalog")
    parser.add_argument("--config", required=True, type=Path)
    args = parser.parse_args(argv)
    server = serve(json.loads(args.config.read_text()))

    def stop(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    host, port = str(server.server_address[0]), server.server_address[1]
    gate: Gate = server.RequestHandlerClass.gate  # type: ignore[attr-defined]
    sys.stderr.write(f"[catalog-gate] listening on {host}:{port}, upstream {gate.upstream_host}:{gate.upstream_port}\n")
    sys.stderr.flush()
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
