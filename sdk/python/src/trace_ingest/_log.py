"""What the SDK says about its own failures: `logging.getLogger("trace_ingest")`, never configured
here unless `debug=True` asks for it, and each cause of a warning said at most once a minute."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any, Callable, Hashable

logger = logging.getLogger("trace_ingest")

EVERY_SECONDS = 60.0


class Notices:
    """Warnings said once per cause per `every` seconds; the report counts every occurrence."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, every: float = EVERY_SECONDS) -> None:
        self._clock = clock
        self._every = every
        self._last: dict[Hashable, float] = {}
        self._lock = threading.RLock()  # re-entrant, as the ledger's

    def warn(self, cause: Hashable, message: str, *args: Any) -> None:
        now = self._clock()
        with self._lock:
            last = self._last.get(cause)
            if last is not None and now - last < self._every:
                return
            self._last[cause] = now
        logger.warning(message, *args)

    def reset(self) -> None:
        with self._lock:
            self._last.clear()


notices = Notices()
"""One table for the process: the causes name what differs (the URL, the code)."""


def enable_debug() -> None:
    """`debug=True`: every request and answer at DEBUG. A program that configured no logging gets a
    handler to stderr on our logger only, as sentry-python's `debug=True` does; one that did keeps
    its handlers, and our logger is set to DEBUG."""
    logger.setLevel(logging.DEBUG)
    if not logger.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s trace_ingest %(levelname)s %(message)s"))
        logger.addHandler(handler)
