"""The client: configuration, the bounded queue, the background worker (or serverless flushes),
exit and fork handling."""

from __future__ import annotations

import atexit
import functools
import inspect
import logging
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Literal, TypeVar

from ._delivery import BODY_OVERHEAD, Batch, Deliverer, Parked, Sleep
from ._ledger import DeliveryReport, Ledger, Undelivered
from ._log import enable_debug
from ._process import flush_on_terminate_in_multiprocessing_child, register
from ._limits import MAX_BODY_BYTES, MAX_TRACES_PER_BATCH
from ._spool import SPOOL_SYNCS, Spool, SpoolSync
from ._tracing import Mask, Span, SpanKind, Trace, _current_span, _current_trace
from ._wire import encode_trace
from ._worker import QueueLimits, Worker
from ._transport import HttpTransport, RequestGate, Transport

logger = logging.getLogger("trace_ingest")
F = TypeVar("F", bound=Callable[..., Any])

class TraceIngest:
    """Sends traces to ``POST {base_url}/v1/traces/ingest``.

    Arguments left out come from the environment: ``TRACE_INGEST_API_KEY``,
    ``TRACE_INGEST_BASE_URL``, ``TRACE_INGEST_ENVIRONMENT``. Traces are queued (bounded by
    ``max_queue_traces`` and ``max_queue_bytes``) and sent by one background thread in gzip batches
    of at most 500 traces and 4 MiB, or, with ``serverless=True``, only inside :meth:`flush`.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        environment: str | None = None,
        workspace_slug: str = "",
        serverless: bool = False,
        max_queue_traces: int = 10_000,
        max_queue_bytes: int = 64 * 1024 * 1024,
        when_full: Literal["drop", "block"] = "drop",
        block_timeout: float = 1.0,
        flush_interval: float = 1.0,
        max_batch_traces: int = MAX_TRACES_PER_BATCH,
        max_body_bytes: int = MAX_BODY_BYTES,
        request_timeout: float = 30.0,
        max_retry_seconds: float = 600.0,
        shutdown_timeout: float = 10.0,
        spool_dir: str | os.PathLike[str] | None = None,
        spool_sync: SpoolSync = "interval",
        spool_interval: float = 0.1,
        mask: Mask | None = None,
        on_undelivered: Callable[[Undelivered], None] | None = None,
        handle_signals: bool = False,
        debug: bool = False,
        transport: Transport | None = None,
    ) -> None:
        api_key = api_key or os.environ.get("TRACE_INGEST_API_KEY")
        base_url = base_url or os.environ.get("TRACE_INGEST_BASE_URL")
        if not api_key:
            raise ValueError("No API key: pass api_key or set TRACE_INGEST_API_KEY")
        if not base_url and transport is None:
            raise ValueError("No base URL: pass base_url or set TRACE_INGEST_BASE_URL")
        if not 1 <= max_batch_traces <= MAX_TRACES_PER_BATCH:
            raise ValueError(f"max_batch_traces must be 1 to {MAX_TRACES_PER_BATCH}")
        if not BODY_OVERHEAD < max_body_bytes <= MAX_BODY_BYTES:
            raise ValueError(f"max_body_bytes must be at most {MAX_BODY_BYTES}")
        if when_full not in ("drop", "block"):
            raise ValueError("when_full must be 'drop' or 'block'")
        if spool_sync not in SPOOL_SYNCS:
            raise ValueError("spool_sync must be 'interval', 'write' or 'fsync'")
        if not 0 < spool_interval <= 60:
            raise ValueError("spool_interval must be more than 0 and at most 60 seconds")
        self.environment = environment or os.environ.get("TRACE_INGEST_ENVIRONMENT") or "default"
        self.workspace_slug = workspace_slug
        self._limits = QueueLimits(serverless, max_queue_traces, max_queue_bytes, when_full, block_timeout, flush_interval, max_batch_traces, max_body_bytes)
        self.shutdown_timeout = shutdown_timeout
        self.mask = mask
        self._api_key = api_key
        if debug:
            enable_debug()
        # Lambda freezes the sandbox between invocations: a background worker's traces wait there.
        self._lambda_warning_due = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME")) and not serverless
        self._wrapped = False
        self._transport = transport or HttpTransport(str(base_url), request_timeout)
        self._max_retry_seconds = max_retry_seconds
        self._on_undelivered = on_undelivered
        self._spool = self._open_spool(spool_dir, spool_sync, spool_interval)
        self._init_state()
        if self._spool is not None:
            self._recover_spool()
        self._fork_gate: RequestGate | None = None
        atexit.register(self._at_exit)
        register(self)
        if handle_signals:
            self._handle_signals()

    # The queue's settings, read-only: the worker was made with them.

    @property
    def serverless(self) -> bool:
        return self._limits.serverless

    @property
    def max_queue_traces(self) -> int:
        return self._limits.max_queue_traces

    @property
    def max_queue_bytes(self) -> int:
        return self._limits.max_queue_bytes

    @property
    def when_full(self) -> Literal["drop", "block"]:
        return self._limits.when_full

    @property
    def block_timeout(self) -> float:
        return self._limits.block_timeout

    @property
    def flush_interval(self) -> float:
        return self._limits.flush_interval

    @property
    def max_batch_traces(self) -> int:
        return self._limits.max_batch_traces

    @property
    def max_body_bytes(self) -> int:
        return self._limits.max_body_bytes

    # --- tracing ---------------------------------------------------------------------------

    def trace(self, name: str = "", **fields: Any) -> Trace:
        """A new trace; use it as a (sync or async) context manager. ``conversation_id`` is sent as
        ``session_id``."""
        return Trace(self, name, **fields)

    def span(self, name: str, **fields: Any) -> Span:
        """A span in the trace open in this context, child of the innermost open span. Raises
        ``RuntimeError`` when no trace is open."""
        trace = _current_trace.get()
        if trace is None:
            raise RuntimeError("client.span() needs an open trace: use `with client.trace(...)` around it, or @client.observe")
        return trace.span(name, **fields)

    def observe(self, name: str | None = None, *, kind: SpanKind = "chain", capture_input: bool = True, capture_output: bool = True) -> Callable[[F], F]:
        """Decorates a function (sync or async) to run inside a span named after it, inside the open
        trace or else a new one. Its arguments become ``input`` and its result ``output``."""

        def decorate(function: F) -> F:
            span_name = name or function.__qualname__
            signature = inspect.signature(function)

            def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
                if not capture_input:
                    return None
                try:
                    bound = signature.bind(*args, **kwargs)
                except TypeError:
                    return {"args": list(args), "kwargs": kwargs}
                return dict(bound.arguments)

            def open_span(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Trace | None, Span]:
                trace = _current_trace.get()
                own = None
                if trace is None:
                    own = trace = self.trace(span_name)
                    own.__enter__()
                span = trace.span(span_name, kind=kind, input=arguments(args, kwargs))
                span.__enter__()
                return own, span

            def close(own: Trace | None, span: Span, error: BaseException | None, result: Any) -> None:
                if error is None and capture_output:
                    span.output = result
                span.__exit__(type(error) if error else None, error, None)
                if own is not None:
                    own.__exit__(type(error) if error else None, error, None)

            if inspect.iscoroutinefunction(function):

                @functools.wraps(function)
                async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                    own, span = open_span(args, kwargs)
                    try:
                        result = await function(*args, **kwargs)
                    except BaseException as error:
                        close(own, span, error, None)
                        raise
                    close(own, span, None, result)
                    return result

                return async_wrapper  # type: ignore[return-value]

            @functools.wraps(function)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                own, span = open_span(args, kwargs)
                try:
                    result = function(*args, **kwargs)
                except BaseException as error:
                    close(own, span, error, None)
                    raise
                close(own, span, None, result)
                return result

            return wrapper  # type: ignore[return-value]

        return decorate

    # --- delivery --------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> DeliveryReport:
        """Sends everything queued and waits up to `timeout` seconds (None: until done). Returns
        what happened to every trace handed over so far; ``pending`` counts those still on their way."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._check_fork()
        self._worker.flush(deadline)
        return self.ledger.report()

    def shutdown(self, timeout: float | None = None) -> DeliveryReport:
        """Flushes for at most `timeout` seconds (default ``shutdown_timeout``) and stops. Traces
        handed over afterwards are dropped as ``shut_down``. With the spool on, a batch still
        unsent stays in it for the next start. If any trace handed over was not delivered, one
        warning says how many, to which URL and why (exit says the same, once)."""
        return self._end(timeout, "at shutdown")

    def _end(self, timeout: float | None, moment: str) -> DeliveryReport:
        timeout = self.shutdown_timeout if timeout is None else timeout
        if self._worker.closed:
            return self.ledger.report()
        # A retry whose wait would pass the end is not waited for: the end comes sooner, not later.
        self._worker.end_by(time.monotonic() + timeout)
        report = self.flush(timeout)
        self._worker.close()
        spool = self._spool
        if spool is not None:
            spool.close()
        try:
            atexit.unregister(self._at_exit)
        except Exception:
            pass
        fate = f"kept in the spool {spool.directory} for the next start" if spool is not None and not spool.broken else "lost (set spool_dir to keep them for the next start)"
        line = self.ledger.not_delivered_line(moment, getattr(self._transport, "url", "the service"), fate)
        if line is not None:
            logger.warning("%s", line)
        return report

    def wrap_handler(self, handler: F | None = None, *, flush_timeout: float | None = None) -> Any:
        """Wraps a Lambda handler (sync or async; also a decorator, with or without arguments) so
        that every invocation flushes before its result is returned, and also when the handler
        raises: the handler's error is re-raised unchanged. The flush waits at most
        `flush_timeout` seconds (default ``shutdown_timeout``), and never past the invocation's
        remaining time less half a second (``context.get_remaining_time_in_millis()``)."""
        self._wrapped = True

        def decorate(function: F) -> F:
            def flush_for(context: Any) -> None:
                timeout = self.shutdown_timeout if flush_timeout is None else flush_timeout
                remaining = getattr(context, "get_remaining_time_in_millis", None)
                try:
                    if callable(remaining):
                        timeout = max(0.0, min(timeout, remaining() / 1000 - 0.5))
                    self.flush(timeout)
                except Exception:  # the handler's own outcome is what the invocation returns
                    logger.exception("trace_ingest could not flush after the handler")

            if inspect.iscoroutinefunction(function):

                @functools.wraps(function)
                async def async_handler(event: Any, context: Any = None, *args: Any, **kwargs: Any) -> Any:
                    try:
                        return await function(event, context, *args, **kwargs)
                    finally:
                        flush_for(context)

                return async_handler  # type: ignore[return-value]

            @functools.wraps(function)
            def sync_handler(event: Any, context: Any = None, *args: Any, **kwargs: Any) -> Any:
                try:
                    return function(event, context, *args, **kwargs)
                finally:
                    flush_for(context)

            return sync_handler  # type: ignore[return-value]

        return decorate(handler) if handler is not None else decorate

    def report(self) -> DeliveryReport:
        """The accounting so far, without waiting."""
        return self.ledger.report()

    def _submit(self, trace: Trace) -> None:
        """Serialises and queues a finished trace. Never raises into the caller."""
        try:
            self._check_fork()
            self.ledger.hand()
            if self._lambda_warning_due and not self._wrapped:
                self._lambda_warning_due = False
                logger.warning(
                    "trace_ingest: running in AWS Lambda (AWS_LAMBDA_FUNCTION_NAME is set) without serverless=True: traces queued when an "
                    "invocation returns wait, frozen, until the next one, and are lost if the sandbox is recycled. Decorate the handler "
                    "with @client.wrap_handler (it flushes before each result is returned), or pass serverless=True and call client.flush() "
                    "before returning."
                )
            if not isinstance(trace.trace_id, str):
                # The service takes a UUID string (or none, then one is made here): no other type can be stored, and
                # the spool keeps ids as strings (a record holding another type ends its segment's readable part).
                self.ledger.drop("not_serialisable", f"trace_id must be a string (a UUID), not {type(trace.trace_id).__name__}", [str(trace.trace_id)])
                return
            try:
                data = encode_trace(trace._wire(self.mask))
            except Exception as error:
                self.ledger.drop("not_serialisable", f"masking or serialising trace {trace.trace_id} failed: {error!r}", [trace.trace_id])
                return
            self._worker.enqueue(trace.trace_id, data)
        except Exception:
            logger.exception("trace_ingest could not queue a trace")

    def _make_deliverer(self, sleep: Sleep, park: Callable[[Parked], None] | None) -> Deliverer:
        return Deliverer(self._transport, self._api_key, self.ledger, sleep, spool=self._spool, max_retry_seconds=self._max_retry_seconds, park=park)

    def _init_state(self) -> None:
        """A new ledger and worker: when the client is made, and in a forked child."""
        self.ledger = Ledger(self._on_undelivered)
        self._pid = os.getpid()
        self._worker = Worker(self._limits, self.ledger, self._spool, self._make_deliverer)

    @property
    def _thread(self) -> threading.Thread | None:
        return self._worker._thread

    @staticmethod
    def _open_spool(directory: str | os.PathLike[str] | None, sync: SpoolSync, interval: float) -> Spool | None:
        if directory is None:
            return None
        try:
            return Spool(directory, sync, interval)
        except OSError as error:
            logger.warning("trace_ingest: spool_dir %s cannot be used (%s); the spool is off, traces are kept in memory only", directory, error)
            return None

    def _recover_spool(self) -> None:
        assert self._spool is not None
        try:
            recovery = self._spool.claim_orphans()
        except Exception:  # never a reason not to start
            logger.exception("trace_ingest could not read the spool; starting without what it held")
            return
        self.ledger.unreadable_spool_files += recovery.unreadable_files
        self.ledger.torn_spool_records += recovery.torn_records
        batches = [Batch(spooled.key, spooled.trace_ids, spooled.body) for spooled in recovery.batches]
        self.ledger.recover(sum(len(batch.trace_ids) for batch in batches) + len(recovery.traces))
        self._worker.recover(batches, list(recovery.traces))

    def _check_fork(self) -> None:
        if self._pid != os.getpid():
            self._after_fork_in_child()

    def _quiesce_before_fork(self, deadline: float) -> None:
        """Holds the transport's gate across the fork, so that the worker is not inside a connect or
        a request (resolver, TLS, import locks) when the process is copied. Waits only until
        `deadline`: a request still running then goes on, and the child copes without it (the codec
        and the resolver were loaded in the constructor; every lock of ours is new in the child)."""
        gate = getattr(self._transport, "gate", None)
        if isinstance(gate, RequestGate):
            self._fork_gate = gate
            gate.close(deadline)

    def _resume_after_fork(self) -> None:
        gate, self._fork_gate = getattr(self, "_fork_gate", None), None
        if gate is not None:
            gate.reopen()

    def _after_fork_in_child(self) -> None:
        """A forked child starts empty: the parent sends what it queued; the child sends its own
        traces with a worker of its own, started when it first needs one."""
        if self._pid == os.getpid():
            return
        self._fork_gate = None
        reset = getattr(self._transport, "after_fork_in_child", None)
        if reset is not None:
            reset()
        # A multiprocessing child made by fork leaves with os._exit, past atexit: multiprocessing's exit
        # finalizers (run when the child's target returns) flush it instead. They are registered from
        # its after-fork list, which it runs in the child after clearing the parent's finalizers.
        multiprocessing_util = sys.modules.get("multiprocessing.util")
        if multiprocessing_util is not None:
            multiprocessing_util.register_after_fork(self, TraceIngest._flush_when_multiprocessing_child_exits)
        if self._spool is not None:
            self._spool.after_fork_in_child()
            if self._spool.broken:
                self._spool = None
        self._init_state()

    @staticmethod
    def _flush_when_multiprocessing_child_exits(client: "TraceIngest") -> None:
        multiprocessing_util = sys.modules.get("multiprocessing.util")
        if multiprocessing_util is not None:
            multiprocessing_util.Finalize(client, client._at_exit, exitpriority=100)
        flush_on_terminate_in_multiprocessing_child()

    def _at_exit(self) -> None:
        try:
            if not self._worker.closed:
                self._end(self.shutdown_timeout, "at exit")
        except Exception:
            logger.exception("trace_ingest could not flush at exit")

    def _handle_signals(self) -> None:
        """On SIGTERM and SIGINT: flush for at most shutdown_timeout, then do what the signal did before."""
        if threading.current_thread() is not threading.main_thread():
            logger.warning("handle_signals needs the main thread; not installed")
            return
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(signum)

            def handler(received: int, frame: Any, previous: Any = previous) -> None:
                self._at_exit()
                if callable(previous):
                    previous(received, frame)
                elif previous == signal.SIG_DFL:
                    signal.signal(received, signal.SIG_DFL)
                    os.kill(os.getpid(), received)

            signal.signal(signum, handler)
