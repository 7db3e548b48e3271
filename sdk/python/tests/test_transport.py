"""The wire's address: the base URL the client is given, and the proxy the environment names."""

from __future__ import annotations

import base64
import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from trace_ingest import TraceIngest
from trace_ingest._transport import HttpTransport, proxy_for

from .fake_service import FakeService

@pytest.mark.parametrize(
    "given,use",
    [
        ("localhost:3000", "http://localhost:3000"),
        ("127.0.0.1:3000/", "http://127.0.0.1:3000"),
        ("traces.example.com", "https://traces.example.com"),
        ("https://traces.example.com/v1/traces/ingest", "https://traces.example.com"),
        ("https://traces.example.com/v1/traces/ingest/", "https://traces.example.com"),
        ("http://localhost:3000/otel/v1/traces", "http://localhost:3000"),
        ("https://gw.example.com/prod/otel/v1/traces", "https://gw.example.com/prod"),
    ],
)
def test_a_base_url_without_a_scheme_or_naming_a_route_is_refused_with_the_url_to_use(given: str, use: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as raised:
        TraceIngest("tik_x", given, serverless=True)
    assert str(raised.value).endswith(f"use {use}")
    monkeypatch.setenv("TRACE_INGEST_BASE_URL", given)
    with pytest.raises(ValueError, match=f"use {use}$"):
        TraceIngest("tik_x", serverless=True)


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ValueError, match="http\\(s\\) URL"):
        TraceIngest("tik_x", "ftp://traces.example.com", serverless=True)


@pytest.mark.parametrize(
    "given,posted",
    [
        ("https://traces.example.com", "https://traces.example.com/v1/traces/ingest"),
        ("https://gw.example.com/prod/", "https://gw.example.com/prod/v1/traces/ingest"),
        ("http://127.0.0.1:3000", "http://127.0.0.1:3000/v1/traces/ingest"),
    ],
)
def test_a_base_url_gets_the_ingest_route_added(given: str, posted: str) -> None:
    assert HttpTransport(given, 1.0).url == posted


class FakeProxy:
    """Records what reaches it. A POST with an absolute URL is answered as the service would; a
    CONNECT is refused (403), after it has been recorded: no TLS server is needed to see the tunnel asked for."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _record(self) -> None:
                proxy.seen.append((self.command, self.path, self.headers.get("Proxy-Authorization")))

            def do_CONNECT(self) -> None:  # noqa: N802
                self._record()
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                self._record()
                traces = json.loads(gzip.decompress(self.rfile.read(int(self.headers["Content-Length"]))))["traces"]
                data = json.dumps({"accepted": len(traces), "rejected": 0, "errors": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def one_trace(client: TraceIngest) -> None:
    with client.trace("t"):
        pass


def test_http_proxy_carries_the_requests_to_an_http_service(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = FakeProxy()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@{proxy.address}")
        client = TraceIngest("tik_x", "http://traces.internal:8080", serverless=True)
        one_trace(client)
        assert client.flush(5).sent == 1
        assert proxy.seen == [("POST", "http://traces.internal:8080/v1/traces/ingest", "Basic " + base64.b64encode(b"user:p@ss").decode())]
    finally:
        proxy.close()


def test_https_proxy_is_asked_for_a_tunnel_to_an_https_service(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = FakeProxy()
    try:
        monkeypatch.setenv("HTTPS_PROXY", f"http://{proxy.address}")
        client = TraceIngest("tik_x", "https://traces.example.com", serverless=True, max_retry_seconds=0)
        one_trace(client)
        report = client.flush(5)
        assert report.sent == 0
        assert proxy.seen and proxy.seen[0] == ("CONNECT", "traces.example.com:443", None)
    finally:
        proxy.close()


def test_no_proxy_sends_straight_to_a_host_it_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    service = FakeService()
    try:
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens: a request through it would fail
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        client = TraceIngest("tik_x", service.url, serverless=True)
        one_trace(client)
        assert client.flush(5).sent == 1
        assert len(service.delivered()) == 1
    finally:
        service.close()


def test_the_proxy_is_chosen_as_sentry_python_chooses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://plain.proxy:3128")
    # An https URL with only HTTP_PROXY set falls back to it, as sentry-python's transport does.
    assert str(proxy_for("https://traces.example.com/v1/traces/ingest")) == "http://plain.proxy:3128"
    monkeypatch.setenv("HTTPS_PROXY", "secure.proxy:8443")
    assert str(proxy_for("https://traces.example.com/v1/traces/ingest")) == "http://secure.proxy:8443"
    assert str(proxy_for("http://traces.example.com/v1/traces/ingest")) == "http://plain.proxy:3128"
    monkeypatch.setenv("NO_PROXY", ".example.com")
    assert proxy_for("https://traces.example.com/v1/traces/ingest") is None
    assert str(proxy_for("https://traces.example.org/v1/traces/ingest")) == "http://secure.proxy:8443"
