"""The wire encoding: a trace's fields as the JSON bytes the service reads, the same bytes the
TypeScript SDK's `JSON.stringify` writes (sdk/conformance/encoding-values.json), and the copy a
span takes of a value when it is set."""

from __future__ import annotations

import json
import math
import re
import traceback
from typing import Any

# Made once: json.dumps with options builds a new encoder on every call. No NaN or Infinity: they are
# not JSON, and one in a numeric field made the service refuse the whole batch (400 malformed_body);
# refused here, only their own trace is dropped (not_serialisable).
def stack_of(error: BaseException) -> str:
    """An exception's stack as Python writes it: its formatted traceback (only its own line when it
    was never raised). A name of its own so that the shared vectors can stand in their stack."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def _plain(value: Any) -> Any:
    """What JSON cannot hold, as both SDKs write it (sdk/conformance/encoding-values.json): a set as
    an array of its members, an exception as ``{"name", "message", "stack"}`` plus ``"cause"`` (its
    ``__cause__``, written the same way) when it has one, anything else as its ``str``."""
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, BaseException):
        error: dict[str, Any] = {"name": type(value).__name__, "message": str(value), "stack": stack_of(value)}
        if value.__cause__ is not None:
            error["cause"] = value.__cause__
        return error
    return str(value)


_FIELD_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_plain, allow_nan=False)
_TRACE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

_SURROGATE = re.compile("[\ud800-\udfff]")


def _well_formed(text: str) -> str:
    """`text` as `JSON.stringify` writes a string's characters: a surrogate pair (two code points in a
    Python str, one character in JavaScript's) joined into its character; a lone surrogate as its JSON
    escape, lower-case hex. Only called when `text` holds a surrogate: the common case costs one failed
    UTF-8 encode of the whole trace, no scan."""
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", joined)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_text(value: Any, empty: str) -> str:
    """The wire rule: input, output and attributes travel as JSON text. None is the field's empty
    value; a value JSON cannot hold is written as its ``str``. A lone surrogate is escaped inside the
    text, as `JSON.stringify` does: raw, it made the whole trace unreadable to the service."""
    if value is None:
        return empty
    try:
        text = _FIELD_ENCODER.encode(value)
    except ValueError:
        # NaN or an infinity (or a cycle, which raises again): written as null, as JSON.stringify
        # writes them. The encoder cannot be told to, so a copy without them is encoded instead.
        text = _FIELD_ENCODER.encode(_copy(value, set(), finite=True))
    return _well_formed(text) if _has_surrogate(text) else text


def encode_trace(wire: dict[str, Any]) -> bytes:
    """One trace's JSON bytes: UTF-8, with each lone surrogate of a string field as its JSON escape
    (the service then decides: a per-trace `lone_surrogate` for a stored string)."""
    text = _TRACE_ENCODER.encode(wire)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _well_formed(text).encode("utf-8")


_IMMUTABLE = (str, int, float, bool, type(None), bytes)


def snapshot(value: Any) -> Any:
    """`value` as it is now: lists, tuples, sets and dicts are copied all the way down, so that a
    `messages` list appended to after its span ended is sent as it was when set. Any other object is
    kept as `_plain` makes it now (what the wire rule writes for it at the end). A value that holds
    itself is kept as it is: serialising it then drops its trace as `not_serialisable`, as before."""
    try:
        return _copy(value, set())
    except (_Cyclic, RecursionError):
        return value


class _Cyclic(ValueError):
    pass


def _copy(value: Any, path: set[int], finite: bool = False) -> Any:
    """A deep copy of plain data; `finite`: NaN and the infinities become None."""
    if isinstance(value, float):
        return None if finite and not math.isfinite(value) else value
    if isinstance(value, _IMMUTABLE):
        return value
    if id(value) in path:
        raise _Cyclic("Circular reference detected")
    path.add(id(value))
    try:
        if isinstance(value, dict):
            return {key: _copy(item, path, finite) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [_copy(item, path, finite) for item in value]
        return _copy(_plain(value), path, finite)
    finally:
        path.discard(id(value))
