"""``python -m lakehouse_platform.runtime.exporter --config exporter.json`` (``--once``: one refresh, print
the metrics)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from prometheus_client.core import REGISTRY
from prometheus_client.exposition import generate_latest

from lakehouse_platform.runtime.exporter.collector import Exporter
from lakehouse_platform.runtime.exporter.config import ExporterConfig
from lakehouse_platform.runtime.exporter.server import serve_metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakehouse_platform.runtime.exporter",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--once", action="store_true", help="refresh once, print the metrics, exit")
    args = parser.parse_args(argv)
    config = ExporterConfig.model_validate(json.loads(args.config.read_text()))
    exporter = Exporter(config)
    if args.once:
        exporter.refresh()
        exporter.probe_once()
        REGISTRY.register(exporter)
        sys.stdout.write(generate_latest(REGISTRY).decode())
        return 0
    REGISTRY.register(exporter)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    serve_metrics(config.listen_host, config.listen_port)
    exporter.start()
    sys.stderr.write(f"[exporter] serving http://{config.listen_host}:{config.listen_port}/metrics; "
                     f"{len(config.tables)} declared tables, discover={config.discover}\n")
    sys.stderr.flush()
    stopped.wait()
    exporter.stopping.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
