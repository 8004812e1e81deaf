"""The exporter's ``/metrics`` endpoint: prometheus-client's threaded WSGI server, listening with a real backlog."""

from __future__ import annotations

import threading
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client.core import REGISTRY
from prometheus_client.exposition import ThreadingWSGIServer, make_wsgi_app

from lakehouse_platform.runtime.config import LISTEN_BACKLOG


class MetricsServer(ThreadingWSGIServer):
    """``/metrics`` of the default registry, listening with ``LISTEN_BACKLOG`` (prometheus-client's own
    ``start_http_server`` keeps socketserver's 5: a burst of scrapes and health checks beyond it waits for a SYN
    retry)."""

    request_queue_size = LISTEN_BACKLOG


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a scrape every few seconds would flood the log


def serve_metrics(host: str, port: int) -> MetricsServer:
    """Serve the default registry on ``host:port`` in a daemon thread; the server (its port, to stop it)."""
    server = make_server(host, port, make_wsgi_app(REGISTRY), MetricsServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
