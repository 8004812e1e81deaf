"""Fixtures of the services' tests: the stand-in HTTP APIs the job scripts call, the lab program."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.job_scripts import Answer, FakeApi


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
