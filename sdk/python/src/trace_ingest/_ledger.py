"""Exact accounting: every trace handed to the SDK is sent, rejected (the server's reason), dropped
(our reason) or still pending."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

from ._log import notices


@dataclass(frozen=True)
class DeliveryReport:
    """What happened to every trace handed over since the client started (or since a fork, in the
    child). ``handed + recovered == sent + sum(rejected) + sum(dropped) + pending`` always holds."""

    handed: int
    recovered: int
    sent: int
    rejected: dict[str, int]
    dropped: dict[str, int]
    pending: int
    retried: dict[str, int] = field(default_factory=dict)
    """Resends, by the reason of the answer that asked for one (``rate_limited``, ``reset``, …);
    outside the sum above: a retried trace is still counted once, where it ended."""
    unreadable_spool_files: int = 0
    """Spool files a start could not read, renamed ``*.unreadable`` (outside the sum above)."""
    torn_spool_records: int = 0
    """Torn tails skipped in the spool's segments, one per file (outside the sum above); the
    readable records before each are recovered as usual."""

    @property
    def accounted(self) -> bool:
        return self.handed + self.recovered == self.sent + sum(self.rejected.values()) + sum(self.dropped.values()) + self.pending


@dataclass(frozen=True)
class Undelivered:
    """Traces that will not be stored, with the reason: passed to the ``on_undelivered`` callback."""

    outcome: Literal["rejected", "dropped"]
    reason: str
    detail: str
    trace_ids: Sequence[str] = field(default_factory=tuple)


class Ledger:
    def __init__(self, on_undelivered: Callable[[Undelivered], None] | None = None) -> None:
        # Re-entrant: a SIGTERM flush (see _process) may run in a thread that was inside the ledger.
        self._lock = threading.RLock()
        self._on_undelivered = on_undelivered
        self.handed = 0
        self.recovered = 0
        self.sent = 0
        self.rejected: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.retried: Counter[str] = Counter()
        self.unreadable_spool_files = 0
        self.torn_spool_records = 0
        self.last_failure = ""
        """The last answer that was not a delivery, or the last network failure, as a user reads it
        (the URL, the status and code, or the error): what the line at exit says of unsent traces."""

    def fail(self, what: str) -> None:
        self.last_failure = what

    def hand(self, count: int = 1) -> None:
        with self._lock:
            self.handed += count

    def recover(self, count: int) -> None:
        with self._lock:
            self.recovered += count

    def sent_ok(self, count: int) -> None:
        with self._lock:
            self.sent += count

    def reject(self, reason: str, detail: str, trace_ids: Sequence[str]) -> None:
        with self._lock:
            self.rejected[reason] += len(trace_ids)
        notices.warn(
            ("rejected", reason),
            "trace_ingest: the service rejected %d trace(s): %s%s (the report counts every rejection; this reason is logged at most once a minute)",
            len(trace_ids),
            reason,
            f" ({detail})" if detail else "",
        )
        self._tell(Undelivered("rejected", reason, detail, tuple(trace_ids)))

    def drop(self, reason: str, detail: str, trace_ids: Sequence[str]) -> None:
        with self._lock:
            self.dropped[reason] += len(trace_ids)
        notices.warn(
            ("dropped", reason),
            "trace_ingest: %d trace(s) dropped, not sent: %s%s (the report counts every drop; this reason is logged at most once a minute)",
            len(trace_ids),
            reason,
            f" ({detail})" if detail else "",
        )
        self._tell(Undelivered("dropped", reason, detail, tuple(trace_ids)))

    def retry(self, reason: str) -> None:
        with self._lock:
            self.retried[reason] += 1

    def report(self) -> DeliveryReport:
        with self._lock:
            done = self.sent + sum(self.rejected.values()) + sum(self.dropped.values())
            return DeliveryReport(
                self.handed,
                self.recovered,
                self.sent,
                dict(self.rejected),
                dict(self.dropped),
                self.handed + self.recovered - done,
                dict(self.retried),
                self.unreadable_spool_files,
                self.torn_spool_records,
            )

    def not_delivered_line(self, moment: str, url: str, unsent_fate: str) -> str | None:
        """One line saying how many traces handed over were not delivered and why, or None when
        all were: said once, when the client ends (`moment`: "at exit", "at shutdown")."""
        report = self.report()
        undelivered = report.pending + sum(report.rejected.values()) + sum(report.dropped.values())
        if not undelivered:
            return None
        parts = []
        if report.pending:
            parts.append(f"{report.pending} unsent, {unsent_fate} (the last attempt: {self.last_failure or 'no answer came before the end'})")
        if report.rejected:
            parts.append("rejected by the service: " + ", ".join(f"{n} {reason}" for reason, n in sorted(report.rejected.items())))
        if report.dropped:
            parts.append("dropped: " + ", ".join(f"{n} {reason}" for reason, n in sorted(report.dropped.items())))
        return f"trace_ingest {moment}: {undelivered} trace(s) of {report.handed + report.recovered} not delivered to {url}: " + "; ".join(parts)

    def _tell(self, event: Undelivered) -> None:
        if self._on_undelivered is None:
            return
        try:
            self._on_undelivered(event)
        except Exception:  # the user's callback never stops delivery
            logging.getLogger("trace_ingest").exception("on_undelivered callback raised")
