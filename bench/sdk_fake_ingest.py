"""A stand-in for `POST /v1/traces/ingest` for the Python SDK's bench (bench/sdk_spool_loss.py): keeps the
service's idempotency (a key seen before is answered again and stores nothing new), so "stored
twice" means what it means in the views: one trace under two different keys."""

from __future__ import annotations

import gzip
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeIngest:
    def __init__(self, max_delay: float = 0.0) -> None:
        self.lock = threading.Lock()
        self.keys: dict[str, int] = {}
        self.stored: dict[str, set[str]] = {}
        """trace id → the keys under which it was stored."""
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                traces = json.loads(gzip.decompress(raw))["traces"]
                key = self.headers["Idempotency-Key"]
                if max_delay:
                    time.sleep(random.uniform(0, max_delay))
                with service.lock:
                    if key not in service.keys:
                        service.keys[key] = len(traces)
                        for trace in traces:
                            service.stored.setdefault(trace["trace_id"], set()).add(key)
                data = json.dumps({"accepted": len(traces), "rejected": 0, "errors": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # type: ignore[method-assign]  # a client killed mid-request
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def lost_and_twice(self, handed: list[str]) -> tuple[int, int]:
        with self.lock:
            lost = sum(1 for trace_id in handed if trace_id not in self.stored)
            twice = sum(1 for keys in self.stored.values() if len(keys) > 1)
        return lost, twice

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
