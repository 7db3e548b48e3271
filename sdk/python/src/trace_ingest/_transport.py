"""HTTP for the delivery core: one persistent connection per worker, stdlib only."""

from __future__ import annotations

import http.client
import inspect
import json
import os
import select
import socket
import threading
import time
import urllib.parse
from typing import Callable, Mapping, Protocol

from ._policy import Answer

USER_AGENT = "trace-ingest-python/0.1.0"


class Transport(Protocol):
    """Sends one gzip batch and returns the answer. A `post` that also takes a keyword `meanwhile`
    calls it once the request is written, while the service works on it (see `HttpTransport.post`);
    other transports' requests and the `meanwhile` work run one after the other."""

    def post(self, body: bytes, headers: Mapping[str, str]) -> Answer: ...


def takes_meanwhile(transport: Transport) -> bool:
    try:
        return "meanwhile" in inspect.signature(transport.post).parameters
    except (TypeError, ValueError):
        return False


class HttpTransport:
    """POSTs gzip batches to ``{base_url}/v1/traces/ingest`` over a kept-alive connection (one per
    thread, so a worker and a serverless flush never share one). Every request, connect included,
    passes `gate`: the client's fork hook closes it (waiting at most 100 ms for the requests in
    progress) so that a fork does not land in the middle of one."""

    def __init__(self, base_url: str, timeout: float) -> None:
        parsed = urllib.parse.urlsplit(base_url.rstrip("/") + "/v1/traces/ingest")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port
        self._path = parsed.path
        self.url = urllib.parse.urlunsplit(parsed)
        self._timeout = timeout
        self._local = threading.local()
        self._pid = os.getpid()
        self.gate = RequestGate()
        _warm(self._host, self._port or (443 if self._https else 80))

    def after_fork_in_child(self) -> None:
        """A forked child: the parent's kept-alive sockets are shared with it, and a child writing on
        one could read the parent's answer as its own. Dropped, not closed: they are the parent's."""
        self._local = threading.local()
        self._pid = os.getpid()
        self.gate = RequestGate()

    def post(self, body: bytes, headers: Mapping[str, str], meanwhile: Callable[[], None] | None = None) -> Answer:
        """`meanwhile` (which must not raise) runs once the request is written, while the service
        works on it: the delivery core compresses the next batch there."""
        with self.gate:
            return self._post(body, headers, meanwhile)

    def _post(self, body: bytes, headers: Mapping[str, str], meanwhile: Callable[[], None] | None) -> Answer:
        connection = self._connection()
        reused = connection.sock is not None
        if reused and _closed_by_peer(connection.sock):
            # The server ended the kept-alive connection while it was idle (its keep-alive timeout
            # is shorter than our gap): a new one, without a failed send first.
            self._close()
            connection, reused = self._connection(), False
        while True:
            try:
                connection.request("POST", self._path, body=body, headers=dict(headers))
                if meanwhile is not None:
                    meanwhile, work = None, meanwhile
                    work()
                response = connection.getresponse()
                raw = response.read()
                break
            except (socket.timeout, TimeoutError) as error:
                self._close()
                return Answer(None, failure="timeout", error=f"no answer within {self._timeout:g} s ({error!r})")
            except (OSError, http.client.HTTPException) as error:
                self._close()
                if not reused:
                    return Answer(None, failure="reset", error=repr(error))
                # Closed by the server between our check and the send: once more at once, on a new
                # connection (the same key and bytes, so a copy it kept is stored once), not a failure.
                connection, reused = self._connection(), False
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


def _closed_by_peer(sock: socket.socket) -> bool:
    """An idle kept-alive socket that is readable has been closed by the server (or holds bytes no
    request asked for): either way it cannot carry the next request."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class RequestGate:
    """Requests pass freely in any number; `close` stops new ones and waits (up to a deadline) for
    those in progress; `reopen` lets them go on."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._closed = False

    def __enter__(self) -> None:
        with self._cond:
            while self._closed:
                self._cond.wait()
            self._active += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify_all()

    def close(self, deadline: float) -> bool:
        """True when no request is in progress; by `deadline` (time.monotonic) at the latest."""
        with self._cond:
            self._closed = True
            while self._active:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def reopen(self) -> None:
        with self._cond:
            self._closed = False
            self._cond.notify_all()
