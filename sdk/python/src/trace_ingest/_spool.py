"""The opt-in durable spool: each batch is written before it is sent and deleted after a final
answer, so a batch of a process killed with ``kill -9`` is resent, with its original key, by the
next process that starts on the same directory."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

HEARTBEAT_SECONDS = 10.0
STALE_AFTER_SECONDS = 60.0
"""An owner that has not touched its file for this long is taken for dead even if its pid lives
(a pid can be reused)."""


_owners_in_this_process: set[str] = set()
"""Spool owners alive in this process: an owner file with our pid but not in here was left by a
process that had our pid before (a restarted container often gets the same pid)."""


@dataclass(frozen=True)
class SpooledBatch:
    key: str
    trace_ids: list[str]
    body: bytes
    """The decoded JSON body, exactly as sent: the service identifies a resend by key and body."""


class Spool:
    """Files ``<owner>.<key>.batch`` (a JSON header line, then the body) and ``<owner>.owner`` (the
    owner's pid). A batch whose owner is dead is claimed with one atomic rename, so two processes
    starting together never both resend it."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._become_owner()

    def _become_owner(self) -> None:
        self.owner = uuid.uuid4().hex
        _owners_in_this_process.add(self.owner)
        self._beat = 0.0
        self.heartbeat()

    def after_fork_in_child(self) -> None:
        """A forked child writes under an owner of its own; the parent's batches stay the parent's."""
        _owners_in_this_process.clear()
        self._become_owner()

    def heartbeat(self) -> None:
        now = time.monotonic()
        if now - self._beat < HEARTBEAT_SECONDS and self._beat:
            return
        self._beat = now
        _write_atomically(self.directory / f"{self.owner}.owner", str(os.getpid()).encode())

    def write(self, batch: SpooledBatch) -> None:
        # Every write and delete keeps the owner file fresh (at most once per HEARTBEAT_SECONDS): a
        # worker busy sending never reaches the idle waits that beat too, and after STALE_AFTER_SECONDS
        # another process would take its batches in flight for orphans and send them again.
        self.heartbeat()
        header = json.dumps({"key": batch.key, "trace_ids": batch.trace_ids}).encode()
        _write_atomically(self._path(batch.key), header + b"\n" + batch.body)

    def delete(self, key: str) -> None:
        self.heartbeat()
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """Gives up ownership once nothing of ours is left: a clean exit leaves no owner file behind."""
        if not any(self.directory.glob(f"{self.owner}.*.batch")):
            (self.directory / f"{self.owner}.owner").unlink(missing_ok=True)
            _owners_in_this_process.discard(self.owner)

    def claim_orphans(self) -> list[SpooledBatch]:
        """Batches of owners that are gone, now ours, oldest first."""
        claimed: list[SpooledBatch] = []
        dead = {p.name.split(".")[0] for p in self.directory.glob("*.owner") if self._is_dead(p)}
        batch_owners = {p.name.split(".")[0] for p in self.directory.glob("*.batch")}
        dead |= {o for o in batch_owners if o != self.owner and not (self.directory / f"{o}.owner").exists()}
        dead -= _owners_in_this_process
        for path in sorted(self.directory.glob("*.batch"), key=_mtime):
            owner, key = path.name.split(".")[0], path.name.split(".")[1]
            if owner not in dead:
                continue
            target = self._path(key)
            try:
                os.rename(path, target)
            except FileNotFoundError:
                continue  # another process claimed it first
            header, _, body = target.read_bytes().partition(b"\n")
            meta = json.loads(header)
            claimed.append(SpooledBatch(meta["key"], list(meta["trace_ids"]), body))
        for owner in dead:
            (self.directory / f"{owner}.owner").unlink(missing_ok=True)
        return claimed

    def _is_dead(self, owner_file: Path) -> bool:
        owner = owner_file.name.split(".")[0]
        if owner in _owners_in_this_process:
            return False
        try:
            pid = int(owner_file.read_text() or "0")
            age = time.time() - owner_file.stat().st_mtime
        except (OSError, ValueError):
            return False
        return pid == os.getpid() or age > STALE_AFTER_SECONDS or not _pid_alive(pid)

    def _path(self, key: str) -> Path:
        return self.directory / f"{self.owner}.{key}.batch"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)
