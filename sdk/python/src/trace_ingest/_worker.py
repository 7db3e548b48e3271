"""The worker: the bounded queue of serialised traces and the one background thread that sends
them in batches (or, serverless, the caller's flush). It runs the delivery core it is given and
knows nothing of HTTP, tracing or the process (the client handles forks, exit and signals)."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Literal

from ._delivery import BODY_OVERHEAD, Ahead, Batch, Deliverer, Parked, Sleep
from ._ledger import Ledger
from ._spool import HEARTBEAT_SECONDS, Spool

logger = logging.getLogger("trace_ingest")

MakeDeliverer = Callable[[Sleep, "Callable[[Parked], None] | None"], Deliverer]
"""Builds the delivery core around a way to sleep (and, for the background thread, to park)."""


@dataclass(frozen=True)
class QueueLimits:
    serverless: bool
    max_queue_traces: int
    max_queue_bytes: int
    when_full: Literal["drop", "block"]
    block_timeout: float
    flush_interval: float
    max_batch_traces: int
    max_body_bytes: int


class Worker:
    def __init__(self, limits: QueueLimits, ledger: Ledger, spool: Spool | None, make_deliverer: MakeDeliverer) -> None:
        self.limits = limits
        self._ledger = ledger
        self._spool = spool
        self._make_deliverer = make_deliverer
        self._cond = threading.Condition()
        self._queue: deque[tuple[str, bytes]] = deque()
        self._recovered: deque[Batch] = deque()
        self._queued_bytes = 0
        self._oldest = time.monotonic()
        self._in_flight = 0
        self._flushes = 0
        self.closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._parked: list[Parked] = []
        self._ending_by: float | None = None
        self._deliverer = make_deliverer(self._sleeper(lambda: self._ending_by), self._park)

    # --- what the client calls -------------------------------------------------------------

    def enqueue(self, trace_id: str, data: bytes) -> None:
        limits = self.limits
        if self.closed:
            self._ledger.drop("shut_down", "handed over after shutdown()", [trace_id])
            return
        if len(data) + BODY_OVERHEAD > limits.max_body_bytes:
            self._ledger.drop("trace_too_large", f"{len(data)} bytes, more than a batch may hold", [trace_id])
            return
        with self._cond:
            if self._full(len(data)):
                if limits.when_full == "block" and not limits.serverless:
                    deadline = time.monotonic() + limits.block_timeout
                    while self._full(len(data)) and (remaining := deadline - time.monotonic()) > 0:
                        self._cond.wait(remaining)
                if self._full(len(data)):
                    self._ledger.drop("queue_full", f"queue holds {len(self._queue)} traces, {self._queued_bytes} bytes", [trace_id])
                    return
            if not self._queue:
                self._oldest = time.monotonic()
            if self._spool is not None:
                # Under the queue's lock: the record is in the spool's order before the worker can
                # take the trace into a batch.
                self._spool.trace(trace_id, data)
            self._queue.append((trace_id, data))
            self._queued_bytes += len(data)
            if self._batch_ready():
                self._cond.notify_all()
            if not limits.serverless:
                self._start()

    def recover(self, batches: list[Batch], traces: list[tuple[str, bytes]]) -> None:
        """What a previous process left in the spool: its batches (each with its key) go first."""
        with self._cond:
            self._recovered.extend(batches)
            for trace_id, data in traces:
                if not self._queue:
                    self._oldest = time.monotonic()
                self._queue.append((trace_id, data))
                self._queued_bytes += len(data)
            if (self._recovered or self._queue) and not self.limits.serverless:
                self._start()

    def flush(self, deadline: float | None) -> None:
        """Sends everything queued, waiting until `deadline` (time.monotonic; None: until done)."""
        if self.limits.serverless:
            self._deliver_inline(deadline)
            return
        with self._cond:
            self._flushes += 1
            self._cond.notify_all()
            try:
                self._start()
                while self._queue or self._recovered or self._in_flight or self._parked:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    self._cond.wait(remaining if remaining is not None else 0.5)
            finally:
                self._flushes -= 1

    def end_by(self, deadline: float) -> None:
        """From now on, a retry whose wait would pass `deadline` is not waited for."""
        self._ending_by = deadline

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._stop.set()
            self._cond.notify_all()

    @property
    def started(self) -> bool:
        return self._thread is not None

    # --- the queue -------------------------------------------------------------------------

    def _full(self, size: int) -> bool:
        return len(self._queue) >= self.limits.max_queue_traces or bool(self._queue and self._queued_bytes + size > self.limits.max_queue_bytes)

    def _batch_ready(self) -> bool:
        return len(self._queue) >= self.limits.max_batch_traces or self._queued_bytes + BODY_OVERHEAD >= self.limits.max_body_bytes

    def _take_batch(self) -> Batch:
        """Up to max_batch_traces traces whose body stays within max_body_bytes (caller holds the lock)."""
        taken: list[tuple[str, bytes]] = []
        size = BODY_OVERHEAD
        while self._queue and len(taken) < self.limits.max_batch_traces:
            trace_id, data = self._queue[0]
            if taken and size + len(data) + 1 > self.limits.max_body_bytes:
                break
            self._queue.popleft()
            self._queued_bytes -= len(data)
            taken.append((trace_id, data))
            size += len(data) + (1 if len(taken) > 1 else 0)
        self._oldest = time.monotonic()
        self._cond.notify_all()
        return Batch.of(taken)

    def _next_due(self, now: float) -> Ahead | None:
        """The next batch due, if any, counted in flight (caller holds the lock): a parked batch
        whose wait is over, a recovered batch, or a batch of the queue when one is due."""
        if self._parked and self._parked[0].due <= now:
            resume = self._parked.pop(0)
            taken = Ahead(resume.batch, False, resume)
        elif self._recovered:
            taken = Ahead(self._recovered.popleft(), True)
        elif self._queue and (self._flushes or self.closed or self._batch_ready() or now - self._oldest >= self.limits.flush_interval):
            taken = Ahead(self._take_batch(), False)
        else:
            return None
        self._in_flight += 1
        return taken

    # --- the background thread -------------------------------------------------------------

    def _start(self) -> None:
        if self.limits.serverless or (self._thread is not None and self._thread.is_alive()):
            return
        self._thread = threading.Thread(target=self._run, name="trace-ingest-worker", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ahead: list[Ahead] = []
        while True:
            with self._cond:
                current = ahead.pop() if ahead else None
                while current is None:
                    now = time.monotonic()
                    current = self._next_due(now)
                    if current is not None:
                        break
                    if self._stop.is_set() or (self.closed and not self._parked):
                        return
                    if self._spool is not None:
                        self._spool.heartbeat()
                    wait = self.limits.flush_interval - (now - self._oldest) if self._queue else HEARTBEAT_SECONDS
                    if self._parked:
                        wait = min(wait, self._parked[0].due - now)
                    self._cond.wait(max(0.01, wait))
            try:
                self._deliverer.deliver(
                    current.batch,
                    spooled=current.spooled,
                    resume=current.resume,
                    compressed=current.compressed,
                    meanwhile=functools.partial(self._take_ahead, ahead, lambda: self._next_due(time.monotonic()), self._deliverer),
                )
            except Exception as error:  # never let the worker die with traces in hand
                logger.exception("trace_ingest delivery failed")
                self._ledger.drop("internal_error", repr(error), current.batch.trace_ids)
            finally:
                with self._cond:
                    self._in_flight -= 1
                    self._cond.notify_all()

    def _take_ahead(self, into: list[Ahead], take: Callable[[], Ahead | None], deliverer: Deliverer) -> None:
        """While a batch is in flight (its request written, see Ahead): the next one is taken and
        compressed, so that it goes as soon as the answer comes. Never raises."""
        try:
            with self._cond:
                ahead = take()
            if ahead is not None:
                ahead.compress(deliverer)
                into.append(ahead)
        except Exception:
            logger.exception("trace_ingest could not prepare the next batch")

    def _park(self, parked: Parked) -> None:
        """A batch whose key another request still holds waits aside; the worker goes on with the rest."""
        with self._cond:
            self._parked.append(parked)
            self._parked.sort(key=lambda p: p.due)
            self._cond.notify_all()

    # --- serverless: delivery in the caller's flush ----------------------------------------

    def _deliver_inline(self, deadline: float | None) -> None:
        deliverer = self._make_deliverer(self._sleeper(lambda: deadline), None)
        ahead: list[Ahead] = []
        while True:
            if ahead:
                current = ahead.pop()
            else:
                with self._cond:
                    current = self._take_inline()
                if current is None:
                    return
            unsent = deliverer.deliver(
                current.batch,
                spooled=current.spooled,
                compressed=current.compressed,
                meanwhile=functools.partial(self._take_ahead, ahead, self._take_inline, deliverer),
            )
            if unsent:
                with self._cond:
                    # Not sent by the deadline: first in line, each with its key, for the next flush.
                    for taken in ahead:
                        self._put_back(taken)
                    self._recovered.extendleft(reversed(unsent))
                return

    def _take_inline(self) -> Ahead | None:
        """The next batch of a serverless flush (caller holds the lock)."""
        if self._recovered:
            return Ahead(self._recovered.popleft(), True)
        if self._queue:
            return Ahead(self._take_batch(), False)
        return None

    def _put_back(self, ahead: Ahead) -> None:
        """A batch taken but never sent goes back where it came from (caller holds the lock)."""
        if ahead.spooled:
            self._recovered.appendleft(ahead.batch)
            return
        items = ahead.batch.traces()
        if not self._queue:
            self._oldest = time.monotonic()
        self._queue.extendleft(reversed(items))
        self._queued_bytes += sum(len(data) for _, data in items)

    def _sleeper(self, deadline: Callable[[], float | None]) -> Sleep:
        def sleep(seconds: float) -> bool:
            until = time.monotonic() + seconds
            while True:
                limit = deadline()
                now = time.monotonic()
                if self._stop.is_set() or (limit is not None and until > limit):
                    return False
                if now >= until:
                    return True
                if self._spool is not None:
                    self._spool.heartbeat()
                self._stop.wait(min(until - now, 1.0))

        return sleep
