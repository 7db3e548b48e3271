"""A tiny stand-in for the service over real HTTP, for tests that cross processes: it records each
request's Idempotency-Key and trace ids, and answers from a policy."""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class FakeService:
    def __init__(
        self,
        answer: Callable[[list[dict[str, Any]], str], tuple[int, dict[str, Any]]] | None = None,
        *,
        close_connections: bool = False,
        keep_alive_seconds: float | None = None,
    ) -> None:
        """`close_connections`: every answer ends its connection (each request connects anew).
        `keep_alive_seconds`: an idle kept-alive connection is closed by the server after that long."""
        self.requests: list[tuple[str, list[str], int]] = []
        self.lock = threading.Lock()
        self.answer = answer or (lambda traces, key: (200, {"accepted": len(traces), "rejected": 0, "errors": []}))
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = keep_alive_seconds

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                traces = json.loads(gzip.decompress(raw))["traces"]
                key = self.headers["Idempotency-Key"]
                status, body = service.answer(traces, key)
                with service.lock:
                    service.requests.append((key, [t["trace_id"] for t in traces], status))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status in (429, 503):
                    self.send_header("Retry-After", "1")
                if close_connections:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self) -> list[str]:
        with self.lock:
            return [tid for _, ids, status in self.requests if status == 200 for tid in ids]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
