"""HTTP for the delivery core: one persistent connection per worker, stdlib only."""

from __future__ import annotations

import base64
import http.client
import inspect
import json
import os
import select
import socket
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
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
        parsed = urllib.parse.urlsplit(ingest_url(base_url))
        assert parsed.hostname is not None
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port
        self._path = parsed.path
        self.url = urllib.parse.urlunsplit(parsed)
        self.proxy = proxy_for(self.url)
        self._timeout = timeout
        self._local = threading.local()
        self._pid = os.getpid()
        self.gate = RequestGate()
        if self.proxy is None:
            _warm(self._host, self._port or (443 if self._https else 80))
        else:
            _warm(self.proxy.host, self.proxy.port)

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
                if self.proxy is not None and not self._https:
                    # A plain-HTTP proxy takes the absolute URL in the request line (RFC 9112 §3.2.2).
                    connection.request("POST", self.url, body=body, headers={**headers, **self.proxy.headers})
                else:
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
            proxy = self.proxy
            if proxy is None:
                connection = cls(self._host, self._port, timeout=self._timeout)
            elif self._https:
                # TLS to the service inside a CONNECT tunnel through the proxy; the certificate is
                # checked against the service's name (http.client's set_tunnel).
                connection = cls(proxy.host, proxy.port, timeout=self._timeout)
                connection.set_tunnel(self._host, self._port, headers=proxy.headers)
            else:
                connection = http.client.HTTPConnection(proxy.host, proxy.port, timeout=self._timeout)
            self._local.connection = connection
        return connection

    def _close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None


ROUTES = ("/v1/traces/ingest", "/otel/v1/traces")
"""Routes of the service: a base URL that ends in one names a route, not the service."""


def ingest_url(base_url: str) -> str:
    """The URL the SDK posts to, ``{base_url}/v1/traces/ingest``. Raises ``ValueError``, with the base
    URL to use, for one without an http(s) scheme or one that already names a route: the first
    reached nothing (or Python's own error), the second posted to a route under a route and got
    ``not_found``, with no word of the URL tried."""
    stripped = base_url.strip().rstrip("/")
    if "://" not in stripped:
        host = stripped.split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
        scheme = "http" if host in ("localhost", "127.0.0.1", "::1") else "https"
        raise ValueError(f"base_url {base_url!r} has no scheme: use {scheme}://{stripped}")
    parsed = urllib.parse.urlsplit(stripped)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"base_url must be an http(s) URL such as https://traces.example.com, got {base_url!r}")
    for route in ROUTES:
        if parsed.path.endswith(route):
            base = urllib.parse.urlunsplit(parsed._replace(path=parsed.path[: -len(route)], query="", fragment=""))
            raise ValueError(f"base_url {base_url!r} names the route {route}; the SDK adds /v1/traces/ingest itself: use {base}")
    return urllib.parse.urlunsplit(parsed._replace(path=parsed.path + "/v1/traces/ingest", query="", fragment=""))


@dataclass(frozen=True)
class Proxy:
    host: str
    port: int
    headers: Mapping[str, str]
    """Proxy-Authorization, when the proxy's URL holds a user and password."""

    def __str__(self) -> str:
        return f"http://{self.host}:{self.port}"


def proxy_for(url: str) -> Proxy | None:
    """The proxy the environment names for `url`, read once when the client is made, as sentry-python
    reads it (urllib's `getproxies`, `proxy_bypass`): ``HTTPS_PROXY`` for an https URL, else
    ``HTTP_PROXY``; none for a host ``NO_PROXY`` lists. The proxy is spoken to in plain HTTP."""
    parsed = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    chosen = (proxies.get("https") if parsed.scheme == "https" else None) or proxies.get("http")
    if not chosen or not parsed.hostname:
        return None
    netloc = parsed.hostname if parsed.port is None else f"{parsed.hostname}:{parsed.port}"
    try:
        if urllib.request.proxy_bypass(netloc) or urllib.request.proxy_bypass(parsed.hostname):
            return None
    except Exception:
        pass
    proxy = urllib.parse.urlsplit(chosen if "://" in chosen else f"http://{chosen}")
    if not proxy.hostname:
        return None
    headers: dict[str, str] = {}
    if proxy.username is not None:
        credentials = f"{urllib.parse.unquote(proxy.username)}:{urllib.parse.unquote(proxy.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
    return Proxy(proxy.hostname, proxy.port or 80, headers)


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
