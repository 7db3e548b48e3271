"""HTTP for the delivery core: one persistent connection per worker, stdlib only."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import urllib.parse
from typing import Mapping, Protocol

from ._policy import Answer

USER_AGENT = "trace-ingest-python/0.1.0"


class Transport(Protocol):
    def post(self, body: bytes, headers: Mapping[str, str]) -> Answer: ...


class HttpTransport:
    """POSTs gzip batches to ``{base_url}/v1/traces/ingest`` over a kept-alive connection (one per
    thread, so a worker and a serverless flush never share one). `gate` is held for each request,
    connect included: the client's fork hook takes it (for at most 100 ms) so that a fork does not
    land in the middle of one."""

    def __init__(self, base_url: str, timeout: float) -> None:
        parsed = urllib.parse.urlsplit(base_url.rstrip("/") + "/v1/traces/ingest")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port
        self._path = parsed.path
        self._timeout = timeout
        self._local = threading.local()
        self._pid = os.getpid()
        self.gate = threading.Lock()
        _warm(self._host, self._port or (443 if self._https else 80))

    def after_fork_in_child(self) -> None:
        """A forked child: the parent's kept-alive sockets are shared with it, and a child writing on
        one could read the parent's answer as its own. Dropped, not closed: they are the parent's."""
        self._local = threading.local()
        self._pid = os.getpid()
        self.gate = threading.Lock()

    def post(self, body: bytes, headers: Mapping[str, str]) -> Answer:
        with self.gate:
            return self._post(body, headers)

    def _post(self, body: bytes, headers: Mapping[str, str]) -> Answer:
        connection = self._connection()
        try:
            connection.request("POST", self._path, body=body, headers=dict(headers))
            response = connection.getresponse()
            raw = response.read()
        except (socket.timeout, TimeoutError):
            self._close()
            return Answer(None, failure="timeout")
        except (OSError, http.client.HTTPException):
            self._close()
            return Answer(None, failure="reset")
        if response.getheader("connection", "").lower() == "close":
            self._close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, parsed)

    def _connection(self) -> http.client.HTTPConnection:
        if self._pid != os.getpid():
            self.after_fork_in_child()
        connection = getattr(self._local, "connection", None)
        if connection is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            connection = cls(self._host, self._port, timeout=self._timeout)
            self._local.connection = connection
        return connection

    def _close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None


def _warm(host: str, port: int) -> None:
    """Imports and loads, in the constructor's thread, what the first connection would otherwise load
    in the worker: the `idna` codec (imported by the first connect) and the resolver's modules. A fork
    while another thread holds an import's module lock leaves it held for ever in the child, whose
    first connect then hangs or fails with ``LookupError: unknown encoding: idna``."""
    try:
        "".encode("idna")
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        pass  # an address that does not resolve yet: delivery says so when it tries
