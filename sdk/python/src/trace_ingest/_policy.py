"""What to do with one answer of the service: a pure function, shared with the TypeScript SDK through
sdk/conformance/delivery.json."""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass, field
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
    if status in (409, 429) or status >= 500 or status == 408:
        retry_after = parse_retry_after(answer.headers.get("retry-after"))
        if retry_after is None:
            return Decision("retry", _backoff(attempt, jitter), reason, detail)
        return Decision("retry", retry_after * (1 + RETRY_AFTER_JITTER * jitter), reason, detail)
    return Decision("final", 0.0, reason, detail)


def _backoff(attempt: int, jitter: float) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2^attempt))."""
    return jitter * min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * (2 ** min(attempt, 30)))


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def rejected_traces(body: Any, batch_size: int) -> list[tuple[int, str, str]]:
    """The per-trace errors of a 200: (index, the first issue's code, its message) for each."""
    errors = body.get("errors") if isinstance(body, dict) else None
    found: list[tuple[int, str, str]] = []
    if not isinstance(errors, list):
        return found
    for item in errors:
        if not isinstance(item, dict) or not isinstance(item.get("index"), int):
            continue
        index = item["index"]
        if not 0 <= index < batch_size:
            continue
        issues = item.get("issues")
        first = issues[0] if isinstance(issues, list) and issues and isinstance(issues[0], dict) else {}
        code = first.get("code") if isinstance(first.get("code"), str) else "invalid_trace"
        message = first.get("message") if isinstance(first.get("message"), str) else ""
        found.append((index, code, f"{first.get('path', '')} {message}".strip()))
    return found
