"""What happens to the process, told to every client in it: a fork (before, and after in parent
and child), and the end of a `multiprocessing` child by SIGTERM. The clients' own reactions are
their methods; this module only knows when to call them."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import weakref
from typing import Any, Protocol

FORK_QUIESCE_SECONDS = 0.1
"""How long a fork may wait, in all, for the clients' requests in progress to finish."""


class ProcessAware(Protocol):
    def _quiesce_before_fork(self, deadline: float) -> None: ...

    def _resume_after_fork(self) -> None: ...

    def _after_fork_in_child(self) -> None: ...

    def _at_exit(self) -> None: ...


_clients: "weakref.WeakSet[Any]" = weakref.WeakSet()


def register(client: ProcessAware) -> None:
    _clients.add(client)
    flush_on_terminate_in_multiprocessing_child()


def _before_fork() -> None:
    # One deadline for every client: a fork waits at most FORK_QUIESCE_SECONDS, however many there are.
    deadline = time.monotonic() + FORK_QUIESCE_SECONDS
    for client in list(_clients):
        client._quiesce_before_fork(deadline)


def _after_fork_in_parent() -> None:
    for client in list(_clients):
        client._resume_after_fork()


def _after_fork_in_child() -> None:
    for client in list(_clients):
        client._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


_terminate_handled_in: int | None = None
"""The pid whose SIGTERM handler is ours (a forked child inherits it, and the flag with it)."""


def _in_multiprocessing_child() -> bool:
    # Not imported here: a program that never imported multiprocessing has no children of it.
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:
        return False
    try:
        # A spawn or forkserver child imports the main module (where a client is often made) before
        # its parent process is known: `_inheriting` is set for that import (multiprocessing/spawn.py).
        return multiprocessing.parent_process() is not None or bool(getattr(multiprocessing.current_process(), "_inheriting", False))
    except Exception:
        return False


def flush_on_terminate_in_multiprocessing_child() -> None:
    """A `multiprocessing` child is ended by SIGTERM when its parent calls `terminate()`, as
    `with Pool(...)` does on leaving the block: Python's default for SIGTERM ends the process at once,
    past `atexit`, and every trace still queued was lost without a word. In such a child only, and
    only while SIGTERM still has its default action, every client flushes (each for at most its
    `shutdown_timeout`) and the signal then does what it would have done."""
    global _terminate_handled_in
    if _terminate_handled_in == os.getpid() or not _in_multiprocessing_child():
        return
    if threading.current_thread() is not threading.main_thread():
        return  # signal.signal works in the main thread only; the next client made there installs it
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the program's own handler (or handle_signals) decides
        signal.signal(signal.SIGTERM, _terminated)
    except (ValueError, OSError):
        return
    _terminate_handled_in = os.getpid()


def _terminated(signum: int, frame: Any) -> None:
    try:
        for client in list(_clients):
            client._at_exit()
    finally:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
