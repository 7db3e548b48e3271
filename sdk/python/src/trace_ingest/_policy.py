"""What to do with one answer of the service: a pure function, shared with the TypeScript SDK through
sdk/conformance/delivery.json."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Mapping

BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 30.0
RETRY_AFTER_JITTER = 0.1
"""A Retry-After is honoured, plus up to 10 % so that clients refused together do not return together."""

SPLIT_CODES_413 = frozenset({"batch_too_large", "payload_too_large"})


@dataclass(frozen=True)
class Answer:
    """One answer: an HTTP status with headers (lower-case names) and the parsed JSON body, or a
    network failure (`failure` is ``"reset"`` or ``"timeout"``) with no status."""

    status: int | None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    failure: str | None = None
    error: str = ""
    """What the network failure was (the exception's text), for the log."""


@dataclass(frozen=True)
class Decision:
    action: Literal["delivered", "retry", "split", "final"]
    delay: float = 0.0
    reason: str = ""
    detail: str = ""


def decide(answer: Answer, batch_size: int, attempt: int, jitter: float) -> Decision:
    """The decision for `answer` to a batch of `batch_size` traces on its `attempt`-th retry
    (0 for the first), with `jitter` drawn uniformly from [0, 1)."""
    status = answer.status
    body = answer.body if isinstance(answer.body, dict) else {}
    code = body.get("code") if isinstance(body.get("code"), str) else None
    detail = body.get("detail") if isinstance(body.get("detail"), str) else ""
    if status is None:
        return Decision("retry", _backoff(attempt, jitter), answer.failure or "network_error")
    if 200 <= status < 300:
        return Decision("delivered")
    reason = code or f"http_{status}"
    if status == 413 or (status == 429 and code == "batch_exceeds_quota"):
        if batch_size > 1:
            return Decision("split", 0.0, reason, detail)
        return Decision("final", 0.0, reason, detail)
    if status in (408, 409, 429) or status >= 500:
        # The longer of the two: a Retry-After of 0 (or one we cannot read) never makes a tight loop.
        wait = _backoff(attempt, jitter)
        retry_after = parse_retry_after(answer.headers.get("retry-after"), time.time())
        if retry_after is not None:
            wait = max(wait, retry_after * (1 + RETRY_AFTER_JITTER * jitter))
        return Decision("retry", wait, reason, detail)
    return Decision("final", 0.0, reason, detail)


def _backoff(attempt: int, jitter: float) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2^attempt))."""
    return jitter * min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * (2 ** min(attempt, 30)))


_DELTA_SECONDS = re.compile(r"[0-9]+", re.ASCII)
_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_TIME = r"([0-9]{2}):([0-9]{2}):([0-9]{2})"
_IMF_FIXDATE = re.compile(rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{{2}}) ({_MONTHS}) ([0-9]{{4}}) {_TIME} GMT", re.ASCII)
_RFC850_DATE = re.compile(rf"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), ([0-9]{{2}})-({_MONTHS})-([0-9]{{2}}) {_TIME} GMT", re.ASCII)
_ASCTIME_DATE = re.compile(rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ({_MONTHS}) ([0-9 ][0-9]) {_TIME} ([0-9]{{4}})", re.ASCII)


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header at the instant `now` (Unix seconds), per RFC 9110
    §10.2.3: delta-seconds (ASCII digits only) or an HTTP-date in one of the three formats of §5.6.7.
    None when absent, unreadable, or a date not after `now`: the caller then waits its backoff."""
    if value is None:
        return None
    value = value.strip(" \t")  # OWS of RFC 9110 §5.6.3: space and tab only (as the TypeScript SDK; http-dates.json)
    if _DELTA_SECONDS.fullmatch(value):
        return float(int(value))
    when = _http_date(value, now)
    if when is None or when <= now:
        return None
    return when - now


def _http_date(value: str, now: float) -> float | None:
    months = _MONTHS.split("|")
    if match := _IMF_FIXDATE.fullmatch(value):
        day, month, year, hour, minute, second = match.groups()
    elif match := _RFC850_DATE.fullmatch(value):
        day, month, short_year, hour, minute, second = match.groups()
        # §5.6.7: a two-digit year more than 50 years in the future means the most recent past year
        # with those digits.
        this_year = time.gmtime(now).tm_year
        candidate = this_year - this_year % 100 + int(short_year)
        year = str(candidate - 100 if candidate > this_year + 50 else candidate)
    elif match := _ASCTIME_DATE.fullmatch(value):
        month, day, hour, minute, second, year = match.groups()
    else:
        return None
    if int(second) > 60:
        return None
    try:
        # Second 60 is a leap second (§5.6.7 allows it): read as 59, as the TypeScript SDK does (http-dates.json).
        return datetime(int(year), months.index(month) + 1, int(day), int(hour), int(minute), min(int(second), 59), tzinfo=timezone.utc).timestamp()
    except ValueError:  # 31 Feb, hour 25, …
        return None


def rejected_traces(body: Any, batch_size: int) -> list[tuple[int, str, str]]:
    """The per-trace errors of a 200: (index, the first issue's code, its message) for each."""
    errors = body.get("errors") if isinstance(body, dict) else None
    found: list[tuple[int, str, str]] = []
    if not isinstance(errors, list):
        return found
    for item in errors:
        # A bool is an int in Python, never in JSON's sense (the TypeScript SDK skips it too: decisions.json).
        if not isinstance(item, dict) or not isinstance(item.get("index"), int) or isinstance(item.get("index"), bool):
            continue
        index = item["index"]
        if not 0 <= index < batch_size:
            continue
        issues = item.get("issues")
        first = issues[0] if isinstance(issues, list) and issues and isinstance(issues[0], dict) else {}
        code = first.get("code") if isinstance(first.get("code"), str) else "invalid_trace"
        path = first.get("path") if isinstance(first.get("path"), str) else ""
        message = first.get("message") if isinstance(first.get("message"), str) else ""
        found.append((index, code, f"{path} {message}".strip()))
    return found
