"""Trace Ingest client: trace your agent, and the SDK delivers the traces with the service's
guarantees (idempotent retries, Retry-After, splitting, exact accounting)."""

from ._client import TraceIngest
from ._ledger import DeliveryReport, Undelivered
from ._limits import MAX_BODY_BYTES, MAX_TRACES_PER_BATCH
from ._tracing import Span, Trace, current_span, current_trace

__all__ = [
    "TraceIngest",
    "Trace",
    "Span",
    "DeliveryReport",
    "Undelivered",
    "current_trace",
    "current_span",
    "MAX_BODY_BYTES",
    "MAX_TRACES_PER_BATCH",
]
__version__ = "0.1.0"
