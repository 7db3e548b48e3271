"""The tracing API: a trace and the spans nested in it, as context managers (sync and async) that
fill in ids, parent links, order, timestamps and durations, tracked with `contextvars`."""

from __future__ import annotations

import threading
import time
import uuid
from contextvars import ContextVar, Token
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence

from ._wire import json_text, snapshot

SpanKind = Literal["llm", "tool", "chain", "retriever", "agent", "custom"]
Status = Literal["ok", "error", "timeout"]
Mask = Callable[[str, Any], Any]
"""Rewrites ``input``, ``output`` or ``attributes`` (named by the first argument) before queueing."""

class TraceRecipient(Protocol):
    """What a trace needs of the client that made it: its defaults, and where a finished trace goes.
    A protocol, not the client's class: the client imports this module, never the other way."""

    environment: str
    workspace_slug: str

    def _submit(self, trace: "Trace") -> None: ...


_current_trace: ContextVar["Trace | None"] = ContextVar("trace_ingest_trace", default=None)
_current_span: ContextVar["Span | None"] = ContextVar("trace_ingest_span", default=None)


def current_trace() -> "Trace | None":
    """The trace open in this context (thread or task), if any."""
    return _current_trace.get()


def current_span() -> "Span | None":
    """The innermost span open in this context, if any."""
    return _current_span.get()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _error_text(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _Timed:
    """Start and end of a trace or span: the wall clock for the timestamp, a monotonic clock for
    the duration."""

    timestamp: str = ""
    duration_ms: float | None = None
    _started: float = 0.0

    def _start(self) -> None:
        self.timestamp = _now()
        self._started = time.perf_counter()

    def _elapsed_ms(self) -> float:
        return round((time.perf_counter() - self._started) * 1000, 3)


class _Fields(_Timed):
    """The field groups a trace and a span share: the model and its token counts, attributes and
    tags, the status, and who ran it (conversation, user, agent). One declaration, one `update`."""

    _fixed: tuple[str, ...] = ()
    """Fields `update` must not change (ids, links)."""

    def _set_fields(
        self,
        *,
        model: str,
        input_tokens: int | None,
        output_tokens: int | None,
        total_tokens: int | None,
        attributes: Mapping[str, Any] | None,
        tags: Sequence[str] | None,
        status: Status,
        conversation_id: str | None,
        user_id: str | None,
        agent_id: str | None,
        agent_name: str | None,
    ) -> None:
        self.model = model
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.total_tokens = total_tokens
        self.attributes: dict[str, Any] = dict(attributes or {})
        if tags is not None:
            self.attributes["tags"] = list(tags)
        self.status: Status = status
        self.conversation_id = conversation_id
        self.user_id = user_id
        self.agent_id = agent_id
        self.agent_name = agent_name

    def update(self, **fields: Any) -> Any:
        """Sets fields by name (``tags`` go into ``attributes``). Raises ``TypeError`` for a name
        that is not a field, as a misspelt keyword argument would."""
        for name, value in fields.items():
            if name == "tags":
                self.attributes["tags"] = list(value)
            elif not hasattr(self, name) or name.startswith("_") or name in self._fixed:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            else:
                setattr(self, name, value)
        return self

    def _shared_wire(self, mask: Mask | None) -> dict[str, Any]:
        return {
            "status": self.status,
            "model": self.model,
            "attributes": json_text(_masked(mask, "attributes", self.attributes), empty="{}"),
            "session_id": self.conversation_id,
            "agent_id": self.agent_id,
            "agent_name": self.agent_name,
            "user_id": self.user_id,
        }


class Span(_Fields):
    """One step of a trace. Set its fields as attributes (``span.output = …``,
    ``span.input_tokens = 12``) or with :meth:`update`. Used as a context manager, it ends when
    the block does; an exception marks it ``error`` with ``error_message`` and goes on untouched.
    ``input`` and ``output`` are taken by value when set (see `snapshot`)."""

    _fixed = ("trace", "span_id")
    _input: Any = None
    _output: Any = None

    @property
    def input(self) -> Any:
        return self._input

    @input.setter
    def input(self, value: Any) -> None:
        self._input = snapshot(value)

    @property
    def output(self) -> Any:
        return self._output

    @output.setter
    def output(self, value: Any) -> None:
        self._output = snapshot(value)

    def __init__(
        self,
        trace: "Trace",
        name: str,
        *,
        kind: SpanKind = "llm",
        parent: "Span | None" = None,
        input: Any = None,
        output: Any = None,
        model: str = "",
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        total_tokens: int | None = None,
        attributes: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        status: Status = "ok",
        error_message: str | None = None,
        conversation_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        agent_name: str | None = None,
    ) -> None:
        self.trace = trace
        self.span_id = str(uuid.uuid4())
        self.parent_span_id = parent.span_id if parent is not None else None
        self.name = name
        self.kind: SpanKind = kind
        self.input = input
        self.output = output
        self.error_message = error_message
        self._set_fields(
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=total_tokens,
            attributes=attributes,
            tags=tags,
            status=status,
            conversation_id=trace.conversation_id if conversation_id is None else conversation_id,
            user_id=trace.user_id if user_id is None else user_id,
            agent_id=trace.agent_id if agent_id is None else agent_id,
            agent_name=trace.agent_name if agent_name is None else agent_name,
        )
        self._token: Token[Span | None] | None = None
        self._start()
        trace._add(self)

    def end(self, error: BaseException | None = None) -> None:
        """Ends the span (a context manager does this itself)."""
        if self.duration_ms is not None:
            return
        if error is not None:
            self.status = "error"
            self.error_message = _error_text(error)
        self.duration_ms = self._elapsed_ms()

    def __enter__(self) -> "Span":
        self._token = _current_span.set(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> Literal[False]:
        self.end(exc)
        if self._token is not None:
            _current_span.reset(self._token)
        return False

    async def __aenter__(self) -> "Span":
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> Literal[False]:
        return self.__exit__(exc_type, exc, tb)

    def _wire(self, mask: Mask | None) -> dict[str, Any]:
        duration = self.duration_ms if self.duration_ms is not None else self._elapsed_ms()
        return {
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "timestamp": self.timestamp,
            "duration_ms": duration,
            "name": self.name,
            "kind": self.kind,
            "input_tokens": self.input_tokens or 0,
            "output_tokens": self.output_tokens or 0,
            "total_tokens": _total(self.input_tokens, self.output_tokens, self.total_tokens),
            "input": json_text(_masked(mask, "input", self.input), empty=""),
            "output": json_text(_masked(mask, "output", self.output), empty=""),
            "error_message": self.error_message,
            **self._shared_wire(mask),
        }


class Trace(_Fields):
    """One run of an agent or model, holding its spans in the order they started. Used as a context
    manager it is sent when the block ends; an exception marks it ``error`` and goes on untouched.
    ``conversation_id`` is sent as ``session_id``."""

    _fixed = ("client", "spans", "trace_id")

    def __init__(
        self,
        client: "TraceRecipient",
        name: str = "",
        *,
        conversation_id: str = "",
        user_id: str = "",
        agent_id: str = "",
        agent_name: str = "",
        environment: str | None = None,
        workspace_slug: str | None = None,
        model: str = "",
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        total_tokens: int | None = None,
        attributes: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        status: Status = "ok",
        trace_id: str | None = None,
    ) -> None:
        self.client = client
        self.trace_id = trace_id or str(uuid.uuid4())
        self.name = name
        self.environment = environment if environment is not None else client.environment
        self.workspace_slug = workspace_slug if workspace_slug is not None else client.workspace_slug
        self._set_fields(
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=total_tokens,
            attributes=attributes,
            tags=tags,
            status=status,
            conversation_id=conversation_id,
            user_id=user_id,
            agent_id=agent_id,
            agent_name=agent_name,
        )
        self.spans: list[Span] = []
        self._lock = threading.Lock()
        self._tokens: tuple[Token[Trace | None], Token[Span | None]] | None = None
        self._sent = False
        self._start()

    def span(self, name: str, **fields: Any) -> Span:
        """A span of this trace, child of the innermost open span of this trace in this context."""
        parent = fields.pop("parent", None)
        if parent is None:
            active = _current_span.get()
            parent = active if active is not None and active.trace is self else None
        return Span(self, name, parent=parent, **fields)

    def end(self, error: BaseException | None = None) -> None:
        """Ends the trace and hands it to the client for delivery (a context manager does this)."""
        with self._lock:
            if self._sent:
                return
            self._sent = True
        if error is not None:
            self.status = "error"
        self.duration_ms = self._elapsed_ms()
        self.client._submit(self)

    def __enter__(self) -> "Trace":
        self._tokens = (_current_trace.set(self), _current_span.set(None))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> Literal[False]:
        if self._tokens is not None:
            _current_span.reset(self._tokens[1])
            _current_trace.reset(self._tokens[0])
        self.end(exc)
        return False

    async def __aenter__(self) -> "Trace":
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> Literal[False]:
        return self.__exit__(exc_type, exc, tb)

    def _add(self, span: Span) -> None:
        with self._lock:
            self.spans.append(span)

    def _wire(self, mask: Mask | None) -> dict[str, Any]:
        with self._lock:
            spans = [span._wire(mask) for span in self.spans]
        input_tokens = self.input_tokens if self.input_tokens is not None else sum(s["input_tokens"] for s in spans)
        output_tokens = self.output_tokens if self.output_tokens is not None else sum(s["output_tokens"] for s in spans)
        total = self.total_tokens if self.total_tokens is not None else (
            input_tokens + output_tokens if self.input_tokens is not None or self.output_tokens is not None else sum(s["total_tokens"] for s in spans)
        )
        return {
            "trace_id": self.trace_id,
            "timestamp": self.timestamp,
            "environment": self.environment,
            "workspace_slug": self.workspace_slug,
            "duration_ms": self.duration_ms if self.duration_ms is not None else self._elapsed_ms(),
            "root_span_name": self.name,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": total,
            **self._shared_wire(mask),
            "spans": spans,
        }


def _total(input_tokens: int | None, output_tokens: int | None, total: int | None) -> int:
    return total if total is not None else (input_tokens or 0) + (output_tokens or 0)


def _masked(mask: Mask | None, field: str, value: Any) -> Any:
    return value if mask is None else mask(field, value)
