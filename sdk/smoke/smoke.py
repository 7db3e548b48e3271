"""Installed-package smoke test: run from a fresh venv with `pip install sdk/python`, against a tiny
local HTTP server standing in for the service."""

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import trace_ingest
from trace_ingest import TraceIngest

seen = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(gzip.decompress(self.rfile.read(int(self.headers["Content-Length"]))))
        seen.append((self.headers["Idempotency-Key"], body))
        data = json.dumps({"accepted": len(body["traces"]), "rejected": 0, "errors": []}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
client = TraceIngest("tik_smoke", f"http://127.0.0.1:{server.server_address[1]}")
with client.trace("smoke", conversation_id="c-1") as trace:
    with client.span("step", kind="tool", input={"x": 1}):
        pass
report = client.shutdown(10)
assert report.sent == 1 and report.pending == 0, report
assert seen[0][1]["traces"][0]["session_id"] == "c-1"
assert "site-packages" in trace_ingest.__file__, trace_ingest.__file__
print("python smoke ok:", trace_ingest.__file__)
server.shutdown()
