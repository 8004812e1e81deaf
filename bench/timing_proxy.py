"""A timing reverse proxy for the commit benchmark: every request a client makes, with its duration.

Put one in front of the store and one in front of the catalog, point a client at them, and each
request is recorded (method, what it was, status, bytes, seconds). The Host header is forwarded as
the client sent it, so S3 SigV4 signatures stay valid. Loopback only; the benchmark starts and stops
it (threads in the benchmark's own process).
"""

from __future__ import annotations

import collections
import http.client
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}


@dataclass(frozen=True)
class Request:
    """One request the client made through the proxy."""

    target: str  # "s3" or "catalog"
    method: str
    kind: str  # what it was: PUT object, multipart create, load table, commit, ...
    status: int
    bytes_in: int
    bytes_out: int
    started: float
    seconds: float


def _kind(target: str, method: str, path: str) -> str:
    if target == "catalog":
        if path.startswith("/v1/config"):
            return "config"
        if method == "POST" and re.search(r"/tables/[^/]+$", path):
            return "commit"
        if method == "GET" and "/tables/" in path:
            return "load table"
        return f"{method} {re.sub(r'/[^/]+$', '/*', path.split('?')[0])}"
    query = path.split("?", 1)[1] if "?" in path else ""
    if method == "POST" and "uploads" in query:
        return "multipart create"
    if method == "PUT" and "partNumber" in query:
        return "multipart part"
    if method == "POST" and "uploadId" in query:
        return "multipart complete"
    return f"{method} object" if method in ("GET", "PUT", "HEAD", "DELETE") else method


class TimingProxy:
    """A loopback reverse proxy to ``upstream`` ("host:port") that records every request."""

    def __init__(self, target: str, upstream: str):
        self.target = target
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: with Nagle on, each answer waits for the
            # client's delayed ACK (~40 ms), which would be the proxy's time, not the request's.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # quiet
                return

            def _body(self) -> bytes | None:
                """The request body; a chunked one (the AWS SDK streams parts so) is de-chunked."""
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";", 1)[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else None

            def _forward(self) -> None:
                started = time.perf_counter()
                body = self._body()
                length = len(body or b"")
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in HOP_HEADERS and k.lower() != "content-length"}
                if body is not None:
                    headers["Content-Length"] = str(length)
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=120)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    payload = response.read()
                finally:
                    conn.close()
                self.send_response(response.status, response.reason)
                for key, value in response.getheaders():
                    if key.lower() not in HOP_HEADERS and key.lower() != "content-length":
                        self.send_header(key, value)
                # A HEAD answer has no body: its Content-Length is the object's size, as upstream said.
                size = response.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", size or str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)
                proxy.record(Request(proxy.target, self.command, _kind(proxy.target, self.command, self.path),
                                     response.status, length, len(payload), started, time.perf_counter() - started))

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward  # http.server dispatches on these names

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> TimingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reset(self) -> list[Request]:
        with self._lock:
            taken, self.requests = self.requests, []
        return taken


def breakdown(requests: list[Request], commits: int) -> list[tuple[str, int, float, float]]:
    """(what, requests per 100 commits, median ms, total ms per commit) per kind of request, slowest first."""
    by_kind: dict[str, list[float]] = collections.defaultdict(list)
    for r in requests:
        by_kind[f"{r.target}: {r.kind}"].append(r.seconds)
    rows = []
    for kind, seconds in by_kind.items():
        seconds.sort()
        rows.append((kind, round(100 * len(seconds) / max(commits, 1)), 1000 * seconds[len(seconds) // 2],
                     1000 * sum(seconds) / max(commits, 1)))
    return sorted(rows, key=lambda row: -row[3])


class ProxyProcess:
    """A TimingProxy in a process of its own, so the benchmark's own CPU time is the client's alone."""

    def __init__(self, target: str, upstream: str):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(target, upstream, child), daemon=True)
        self.address = ""

    def __enter__(self) -> ProxyProcess:
        self._process.start()
        self.address = self._pipe.recv()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pipe.send("stop")
        self._process.join(timeout=10)

    def reset(self) -> list[Request]:
        """The requests recorded since the last reset."""
        self._pipe.send("reset")
        requests: list[Request] = self._pipe.recv()
        return requests


def _serve(target: str, upstream: str, pipe: Any) -> None:
    with TimingProxy(target, upstream) as proxy:
        pipe.send(proxy.address)
        while (command := pipe.recv()) != "stop":
            if command == "reset":
                pipe.send(proxy.reset())
