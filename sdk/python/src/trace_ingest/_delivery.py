"""The delivery core: sends one batch until it has a final answer, splitting it where the service
says it can never fit, and accounts for every trace it carried."""

from __future__ import annotations

import gzip
import logging
import random
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Sequence

from ._ledger import Ledger
from ._log import notices
from ._policy import Answer, decide, rejected_traces
from ._spool import Spool
from ._transport import USER_AGENT, Transport, takes_meanwhile

logger = logging.getLogger("trace_ingest")

BODY_PREFIX = b'{"traces":['
BODY_SUFFIX = b"]}"
BODY_OVERHEAD = len(BODY_PREFIX) + len(BODY_SUFFIX)


@dataclass(frozen=True)
class Batch:
    """Up to 500 serialised traces under one Idempotency-Key, chosen when the batch is formed and
    kept across every retry of it."""

    key: str
    trace_ids: Sequence[str]
    body: bytes
    items: Sequence[tuple[str, bytes]] | None = None

    @staticmethod
    def of(traces: Sequence[tuple[str, bytes]], key: str | None = None) -> "Batch":
        body = BODY_PREFIX + b",".join(data for _, data in traces) + BODY_SUFFIX
        return Batch(key or str(uuid.uuid4()), [trace_id for trace_id, _ in traces], body, traces)

    def traces(self) -> list[tuple[str, bytes]]:
        """The serialised traces (read back out of the body for a batch recovered from the spool)."""
        import json

        if self.items is not None:
            return list(self.items)
        decoded = json.loads(self.body)["traces"]
        return [(tid, json.dumps(t, separators=(",", ":"), ensure_ascii=False).encode()) for tid, t in zip(self.trace_ids, decoded)]


@dataclass(frozen=True)
class Parked:
    """A batch set aside until `due` (a clock time) because its key is still held by a request in
    progress (409): other batches need not wait behind it."""

    batch: Batch
    due: float
    attempt: int
    started: float


Sleep = Callable[[float], bool]
"""Waits that many seconds; returns False when delivery must stop (the batch stays pending)."""


class Ahead:
    """The next batch, taken while the current one is in flight and compressed during its request
    (between writing it and reading the answer, see `HttpTransport.post`), so that it goes as soon
    as the answer comes: one process keeps its connection busy, as the TypeScript pump does."""

    def __init__(self, batch: Batch, spooled: bool, resume: Parked | None = None) -> None:
        self.batch = batch
        self.spooled = spooled
        self.resume = resume
        self.compressed: bytes | None = None

    def compress(self, deliverer: "Deliverer") -> None:
        """Never raises: a body that cannot be compressed now is compressed (and fails) when it is sent."""
        try:
            self.compressed = deliverer.compress(self.batch.body)
        except Exception:
            self.compressed = None


class Deliverer:
    def __init__(
        self,
        transport: Transport,
        api_key: str,
        ledger: Ledger,
        sleep: Sleep,
        *,
        spool: Spool | None = None,
        max_retry_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
        compress_level: int = 1,
        park: Callable[[Parked], None] | None = None,
    ) -> None:
        self._transport = transport
        self._api_key = api_key
        self._ledger = ledger
        self._sleep = sleep
        self._spool = spool
        self._max_retry_seconds = max_retry_seconds
        self._clock = clock
        self._jitter = jitter
        self._level = compress_level
        self._park = park
        self._overlaps = takes_meanwhile(transport)

    def compress(self, body: bytes) -> bytes:
        return gzip.compress(body, compresslevel=self._level, mtime=0)

    def deliver(
        self,
        batch: Batch,
        spooled: bool = False,
        resume: Parked | None = None,
        *,
        compressed: bytes | None = None,
        meanwhile: Callable[[], None] | None = None,
    ) -> list[Batch]:
        """Sends `batch` (and its parts, if split) to a final answer, or parks it (see `Parked`).
        Returns what a deadline stopped before its answer, empty when nothing: the batch itself, or
        the parts of it still unsent once it was split (never the whole again, whose other parts may
        be stored). Their traces stay pending (and spooled), each part with its own key.
        Never raises: a failure of our own (a spool that cannot be written, say) drops what it had not
        settled yet as ``internal_error``, so no trace is left unaccounted for.
        `compressed` is the body's gzip when the caller made it already; `meanwhile` (which must not
        raise) runs once during the first request, while the service works on it."""
        work = [batch]
        try:
            if self._spool is not None and not spooled and resume is None:
                self._spool.batch(batch.key, list(batch.trace_ids), batch.body)
            while work:
                current = work[0]
                first = current is batch
                parts = self._send(current, resume if first else None, compressed if first else None, meanwhile)
                meanwhile = None
                if parts is None:
                    return list(work)
                work[:1] = parts
        except Exception as error:
            logger.exception("trace_ingest delivery failed")
            self._ledger.drop("internal_error", repr(error), [trace_id for part in work for trace_id in part.trace_ids])
            for part in work:
                self._forget(part)
        return []

    def _send(
        self, batch: Batch, resume: Parked | None = None, compressed: bytes | None = None, meanwhile: Callable[[], None] | None = None
    ) -> list[Batch] | None:
        """One batch to its end: [] when settled or parked, its two halves when split, None when stopped."""
        if compressed is None:
            compressed = self.compress(batch.body)
        headers = {
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
            "X-API-Key": self._api_key,
            "Idempotency-Key": batch.key,
            "User-Agent": USER_AGENT,
        }
        started = self._clock() if resume is None else resume.started
        attempt = 0 if resume is None else resume.attempt
        url = getattr(self._transport, "url", "the service")
        while True:
            sent_at = time.perf_counter()
            answer = self._post(compressed, headers, meanwhile)
            meanwhile = None
            decision = decide(answer, len(batch.trace_ids), attempt, self._jitter())
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "POST %s Idempotency-Key=%s traces=%d bytes=%d gzip=%d -> %s in %.0f ms: %s %s",
                    url, batch.key, len(batch.trace_ids), len(batch.body), len(compressed),
                    answer.status if answer.status is not None else f"{answer.failure} {answer.error}",
                    (time.perf_counter() - sent_at) * 1000, decision.action, decision.reason or "",
                )
            if decision.action != "delivered":
                self._ledger.fail(_failure_text(url, answer, decision.reason, decision.detail))
            if answer.status is None:
                notices.warn(
                    ("unreachable", url),
                    "trace_ingest: cannot reach %s (%s: %s); retrying with backoff, the traces stay queued (logged at most once a minute)",
                    url, answer.failure, answer.error or "no detail",
                )
            if decision.action == "delivered":
                self._settle_delivered(batch, answer)
                return []
            if decision.action == "final":
                self._ledger.reject(decision.reason, decision.detail, batch.trace_ids)
                self._forget(batch)
                return []
            if decision.action == "split":
                return self._split(batch)
            if self._clock() + decision.delay - started > self._max_retry_seconds:
                self._ledger.drop("retries_exhausted", f"still {decision.reason} after {self._max_retry_seconds:.0f} s", batch.trace_ids)
                self._forget(batch)
                return []
            self._ledger.retry(decision.reason)
            if answer.status == 409 and self._park is not None:
                self._park(Parked(batch, self._clock() + decision.delay, attempt + 1, started))
                return []
            if not self._sleep(decision.delay):
                return None
            attempt += 1

    def _post(self, body: bytes, headers: dict[str, str], meanwhile: Callable[[], None] | None) -> Answer:
        if meanwhile is None:
            return self._transport.post(body, headers)
        if self._overlaps:
            return self._transport.post(body, headers, meanwhile=meanwhile)  # type: ignore[call-arg]
        answer = self._transport.post(body, headers)
        meanwhile()
        return answer

    def _settle_delivered(self, batch: Batch, answer: Answer) -> None:
        rejected = rejected_traces(answer.body, len(batch.trace_ids))
        for index, code, detail in rejected:
            self._ledger.reject(code, detail, [batch.trace_ids[index]])
        self._ledger.sent_ok(len(batch.trace_ids) - len(rejected))
        self._forget(batch)

    def _split(self, batch: Batch) -> list[Batch]:
        traces = batch.traces()
        middle = (len(traces) + 1) // 2
        halves = [Batch.of(traces[:middle]), Batch.of(traces[middle:])]
        if self._spool is not None:
            # The halves are on disk before the whole is closed: a kill in between resends traces
            # that the service refused as a whole, never loses them.
            for half in halves:
                self._spool.batch(half.key, list(half.trace_ids), half.body)
            self._spool.done(batch.key, [])
        return halves

    def _forget(self, batch: Batch) -> None:
        """The batch has its final answer: closed in the spool, never resent."""
        if self._spool is not None:
            self._spool.done(batch.key, batch.trace_ids)


def _failure_text(url: str, answer: Answer, reason: str, detail: str) -> str:
    # The TypeScript SDK's words for the same (its exit line): one vocabulary in both languages.
    if answer.status is None:
        return f"could not reach {url} ({answer.failure}: {answer.error or 'no detail'})"
    return f"POST {url} answered {answer.status} ({reason}" + (f": {detail})" if detail else ")")
