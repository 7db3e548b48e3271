"""The opt-in write-ahead spool (format v2, shared with the TypeScript SDK: docs/sdk.md, "The
durable spool"): every trace handed over is appended to a checksummed segment file within the
spool interval (or before the hand-over returns), every batch before its first request, and a
``done`` record once it has a final answer. A process killed with ``kill -9`` loses at most what it
handed over in the last interval; the next process on the directory claims its files and sends
what has no ``done``: a batch with its original key and bytes, a loose trace in a new batch."""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._log import notices
from ._wire import encode_trace

logger = logging.getLogger("trace_ingest")

SpoolSync = Literal["interval", "write", "fsync"]
SPOOL_SYNCS: tuple[SpoolSync, ...] = ("interval", "write", "fsync")
MAGIC = b"TISPOOL2"
SEGMENT_BYTES = 4 * 1024 * 1024
_RECORD_HEADER = struct.Struct(">II")

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


@dataclass
class Recovery:
    """What a start found of dead owners: batches to resend as they are, loose traces to queue again."""

    batches: list[SpooledBatch] = field(default_factory=list)
    traces: list[tuple[str, bytes]] = field(default_factory=list)
    unreadable_files: int = 0
    torn_records: int = 0


@dataclass
class _Segment:
    path: Path
    live: int = 0


class _Pending:
    """A trace record not yet written; emptied if its trace is done first, so it is never written."""

    __slots__ = ("payload", "trace_id", "batch_key")

    def __init__(self, payload: bytes | None, trace_id: str | None = None, batch_key: str | None = None) -> None:
        self.payload = payload
        self.trace_id = trace_id
        self.batch_key = batch_key


def frame(payload: bytes) -> bytes:
    return _RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _not_json(constant: str) -> Any:
    # Python's json reads NaN and Infinity; JSON, the TypeScript SDK and the trace encoder (allow_nan=False) do not.
    raise ValueError(f"{constant} is not JSON")


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _usable(record: Any) -> bool:
    """A record of a known kind has its fields' types; a kind this version does not know is usable
    (skipped by recovery). The TypeScript SDK's ``parseRecord`` draws the same line."""
    if not isinstance(record, dict):
        return False
    kind = record.get("t")
    if kind == "trace":
        return isinstance(record.get("id"), str) and isinstance(record.get("trace"), dict)
    if kind == "batch":
        return isinstance(record.get("key"), str) and _is_str_list(record.get("ids")) and isinstance(record.get("body"), str)
    if kind == "done":
        return "key" in record and (record["key"] is None or isinstance(record["key"], str)) and _is_str_list(record.get("ids"))
    return True


def read_segment(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of a segment (`data` starts with the magic) and where its readable part ends: a
    record that runs past the end, fails its CRC, is not a JSON object, or is of a known kind with a
    field of the wrong type ends it (neither SDK writes one: what follows is not trusted either)."""
    records: list[dict[str, Any]] = []
    offset = len(MAGIC)
    while offset + _RECORD_HEADER.size <= len(data):
        length, crc = _RECORD_HEADER.unpack_from(data, offset)
        end = offset + _RECORD_HEADER.size + length
        payload = data[offset + _RECORD_HEADER.size : end]
        if end > len(data) or zlib.crc32(payload) != crc:
            break
        try:
            record = json.loads(payload, parse_constant=_not_json)
        except ValueError:
            break
        if not _usable(record):
            break
        records.append(record)
        offset = end
    return records, offset


class Spool:
    """Files ``<owner>.owner`` (the owner's pid; its mtime is the heartbeat) and append-only
    segments ``<owner>.<seq>.seg``. A dead owner's files are claimed with one atomic rename each, so
    two processes starting together never both resend them. Writes happen under one lock, in the
    order the records were made; segments are deleted oldest first once all their records are done,
    so a ``done`` is never deleted before the record it closes."""

    def __init__(self, directory: str | os.PathLike[str], sync: SpoolSync = "interval", interval: float = 0.1) -> None:
        self.directory = Path(directory)
        self.sync = sync
        self.interval = interval
        self.directory.mkdir(parents=True, exist_ok=True)
        self._fork_reset()

    # --- ownership --------------------------------------------------------------------------

    def _fork_reset(self) -> None:
        self._lock = threading.Condition()
        self.broken = False
        self._segments: dict[int, _Segment] = {}
        self._seq = 0
        self._fd: int | None = None
        self._current: _Segment | None = None
        self._size = 0
        self._buffer: list[_Pending] = []
        self._buffered_since = 0.0
        self._trace_seq: dict[str, int | _Pending] = {}
        self._batch_seq: dict[str, int] = {}
        self._writer: threading.Thread | None = None
        self._stopped = False
        self.write_seconds: list[float] = []
        self.owner = uuid.uuid4().hex
        _owners_in_this_process.add(self.owner)
        self._beat = 0.0
        _write_atomically(self.directory / f"{self.owner}.owner", str(os.getpid()).encode())
        self._beat = time.monotonic()

    def after_fork_in_child(self) -> None:
        """A forked child writes under an owner of its own; the parent's files stay the parent's.
        The parent's descriptor is closed in the child only; its locks are new."""
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        _owners_in_this_process.clear()
        try:
            self._fork_reset()
        except OSError as error:
            self._fail(error)

    def heartbeat(self) -> None:
        now = time.monotonic()
        if now - self._beat < HEARTBEAT_SECONDS and self._beat:
            return
        self._beat = now
        try:
            _write_atomically(self.directory / f"{self.owner}.owner", str(os.getpid()).encode())
        except OSError:
            pass  # a write of records that fails too turns the spool off; a lone beat can wait

    # --- records ----------------------------------------------------------------------------

    def trace(self, trace_id: str, data: bytes) -> None:
        """A trace handed over (`data`, its wire JSON): on disk within the interval, or now."""
        payload = b'{"t":"trace","id":' + json.dumps(trace_id).encode() + b',"trace":' + data + b"}"
        with self._lock:
            if self.broken:
                return
            pending = _Pending(payload, trace_id=trace_id)
            self._trace_seq[trace_id] = pending
            self._buffer.append(pending)
            self._start_writer()  # also the heartbeat of an idle owner, in every setting
            if self.sync != "interval" or self._stopped:
                self._flush_locked()
            elif len(self._buffer) == 1:
                self._buffered_since = time.monotonic()
                self._lock.notify()
            elif time.monotonic() - self._buffered_since >= self.interval / 2:
                # The spool thread is late (a busy machine): a caller that keeps handing traces over
                # writes them itself, so the interval holds while it does.
                self._flush_locked()

    def batch(self, key: str, trace_ids: list[str], body: bytes) -> None:
        """A batch about to be sent: on disk (with every trace record before it) before this returns."""
        payload = json.dumps({"t": "batch", "key": key, "ids": trace_ids, "body": body.decode("utf-8")}, ensure_ascii=False).encode("utf-8", "surrogatepass")
        with self._lock:
            if self.broken:
                return
            self._buffer.append(_Pending(payload, batch_key=key))
            self._batch_seq[key] = -1
            self._flush_locked()

    def done(self, key: str | None, trace_ids: list[str] | tuple[str, ...]) -> None:
        """`key`'s batch and `trace_ids` have a final answer (or, with no ids, a split replaced the batch)."""
        with self._lock:
            if self.broken:
                return
            touched = False
            if key is not None and (seq := self._batch_seq.pop(key, None)) is not None:
                touched = self._release(seq) or touched
            for trace_id in trace_ids:
                where = self._trace_seq.pop(trace_id, None)
                if isinstance(where, _Pending):
                    where.payload = None  # never written: nothing to close
                elif where is not None:
                    touched = self._release(where) or touched
            if touched or key is not None:
                if not self._buffer:
                    self._buffered_since = time.monotonic()
                self._buffer.append(_Pending(json.dumps({"t": "done", "key": key, "ids": list(trace_ids)}).encode()))
                if self.sync == "interval" and not self._stopped:
                    self._start_writer()
                    self._lock.notify()
                else:
                    self._flush_locked()
            self._collect()

    def close(self) -> None:
        """Writes what is buffered; gives up the files once nothing of ours is live: a clean exit with
        everything delivered leaves nothing behind."""
        with self._lock:
            if self.broken:
                return
            self._flush_locked()
            self._stopped = True
            self._lock.notify_all()
            self._collect()
            if not self._segments:
                self._guard((self.directory / f"{self.owner}.owner").unlink, missing_ok=True)
                _owners_in_this_process.discard(self.owner)

    # --- writing ----------------------------------------------------------------------------

    def _release(self, seq: int) -> bool:
        segment = self._segments.get(seq)
        if segment is None:
            return False
        segment.live -= 1
        return True

    def _collect(self) -> None:
        """Deletes the oldest segments while all their records are done (a later segment may hold the
        `done` of an older one's record, so never out of order)."""
        while self._segments:
            seq = next(iter(self._segments))
            segment = self._segments[seq]
            if segment.live > 0:
                return
            if segment is self._current:
                if any(p.payload is not None for p in self._buffer):
                    return  # about to be written to
                self._close_current()
            self._guard(segment.path.unlink, missing_ok=True)
            del self._segments[seq]

    def _close_current(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd, self._current, self._size = None, None, 0

    def _open_segment(self) -> None:
        self._close_current()
        self._seq += 1
        path = self.directory / f"{self.owner}.{self._seq:08d}.seg"
        # The magic is in place before the name exists: a kill never leaves a segment without it.
        _write_atomically(path, MAGIC)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._current = self._segments[self._seq] = _Segment(path)
        self._size = len(MAGIC)

    def _flush_locked(self) -> None:
        if not self._buffer:
            return
        started = time.perf_counter()
        buffer, self._buffer = self._buffer, []
        try:
            self.heartbeat()
            chunk: list[bytes] = []
            for pending in buffer:
                if pending.payload is None:
                    continue
                record = frame(pending.payload)
                if self._fd is None or (self._size + len(record) > SEGMENT_BYTES and self._size > len(MAGIC)):
                    self._write(chunk)
                    chunk = []
                    self._open_segment()
                assert self._current is not None
                chunk.append(record)
                self._size += len(record)
                self._count(pending)
            self._write(chunk)
            if self.sync == "fsync" and self._fd is not None:
                os.fsync(self._fd)
        except OSError as error:
            self._fail(error)
            return
        self.write_seconds.append(time.perf_counter() - started)
        if len(self.write_seconds) > 10_000:
            del self.write_seconds[:5_000]

    def _count(self, pending: _Pending) -> None:
        """The record just placed in the current segment keeps it until its trace or batch is done."""
        assert self._current is not None
        if pending.trace_id is not None and self._trace_seq.get(pending.trace_id) is pending:
            self._trace_seq[pending.trace_id] = self._seq
            self._current.live += 1
        elif pending.batch_key is not None and self._batch_seq.get(pending.batch_key) == -1:
            self._batch_seq[pending.batch_key] = self._seq
            self._current.live += 1

    def _write(self, chunk: list[bytes]) -> None:
        if not chunk or self._fd is None:
            return
        data = memoryview(b"".join(chunk))
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def _start_writer(self) -> None:
        if not self._stopped and (self._writer is None or not self._writer.is_alive()):
            self._writer = threading.Thread(target=self._write_in_background, name="trace-ingest-spool", daemon=True)
            self._writer.start()

    def _write_in_background(self) -> None:
        with self._lock:
            while not self._stopped and not self.broken:
                if not self._buffer:
                    self._lock.wait(HEARTBEAT_SECONDS)
                    if not self._buffer:
                        self.heartbeat()
                        continue
                # Half the interval: a writer woken late by a busy machine still meets the bound.
                self._lock.wait(max(0.0, self._buffered_since + self.interval / 2 - time.monotonic()))
                self._flush_locked()
                self._collect()

    def _fail(self, error: OSError) -> None:
        """The disk refuses: the spool turns off (said once) and delivery goes on from memory. Our
        files go, so that a later start does not send again what this process delivers."""
        self.broken = True
        self._close_current()
        logger.warning("trace_ingest: spool directory %s cannot be written (%s); the spool is off, traces are kept in memory only", self.directory, error)
        for segment in self._segments.values():
            self._guard(segment.path.unlink, missing_ok=True)
        self._segments.clear()
        self._guard((self.directory / f"{self.owner}.owner").unlink, missing_ok=True)

    def _guard(self, action: Any, **kwargs: Any) -> None:
        try:
            action(**kwargs)
        except OSError:
            pass

    # --- recovery ---------------------------------------------------------------------------

    def claim_orphans(self) -> Recovery:
        """The live batches and traces of owners that are gone, now ours. Never raises: a file that
        cannot be read is renamed ``<name>.unreadable`` (no start claims it again) and counted."""
        recovery = Recovery()
        self._remove_dead_temporaries()
        # One claimer per dead owner: its files are read as a whole (a `done` in one segment closes
        # a record in another), so two processes starting together never split them.
        dead = {owner for owner in self._dead_owners() if self._lock_owner(owner)}
        if not dead:
            return recovery
        claimed_segments: list[tuple[int, Path]] = []
        claimed_batches: list[Path] = []
        # Owners oldest first (by their oldest segment), then each owner's segments in order: what was handed over
        # first is resent first, as the shared format says (docs/sdk.md). Owner names are random.
        segments = self._files_of(dead, ".seg")
        oldest: dict[str, float] = {}
        for path in segments:
            owner = path.name.split(".")[0]
            oldest[owner] = min(oldest.get(owner, _mtime(path)), _mtime(path))
        for path in sorted(segments, key=lambda p: (oldest[p.name.split(".")[0]], p.name.split(".")[0], p.name.split(".")[1])):
            with self._lock:
                self._seq += 1
                seq = self._seq
            target = self.directory / f"{self.owner}.{seq:08d}.seg"
            if self._claim(path, target):
                claimed_segments.append((seq, target))
        for path in sorted(self._files_of(dead, ".batch"), key=_mtime):
            target = self.directory / f"{self.owner}.{path.name.split('.')[1]}.batch"
            if self._claim(path, target):
                claimed_batches.append(target)
        for owner in dead:
            self._guard((self.directory / f"{owner}.owner").unlink, missing_ok=True)
            self._guard((self.directory / f"{owner}.claim").unlink, missing_ok=True)

        batches: dict[str, tuple[int, SpooledBatch]] = {}
        traces: dict[str, tuple[int, bytes]] = {}
        done_keys: set[str] = set()
        done_ids: set[str] = set()
        for seq, path in claimed_segments:
            records = self._read_claimed(path, recovery)
            if records is None:
                continue
            with self._lock:
                self._segments[seq] = _Segment(path)
            for record in records:
                kind = record.get("t")
                # read_segment passed only records whose fields have their types.
                if kind == "trace":
                    traces[record["id"]] = (seq, encode_trace(record["trace"]))
                elif kind == "batch":
                    batches[record["key"]] = (seq, SpooledBatch(record["key"], list(record["ids"]), record["body"].encode("utf-8", "surrogatepass")))
                elif kind == "done":
                    if record["key"] is not None:
                        done_keys.add(record["key"])
                    done_ids.update(record["ids"])
        v1 = [b for b in (self._read_v1(path, recovery) for path in claimed_batches) if b is not None]

        # A batch whose traces reappear in a later batch was split, its `done` lost in a crash: its
        # parts stand for it (resending both would store those traces twice until compaction).
        last_batch_of = {trace_id: key for key, (_, b) in batches.items() if key not in done_keys for trace_id in b.trace_ids}
        done_keys.update(key for key, (_, b) in batches.items() if any(last_batch_of.get(i) != key for i in b.trace_ids))
        live_batches = [(seq, b) for key, (seq, b) in batches.items() if key not in done_keys]
        in_live_batches = {trace_id for _, b in live_batches for trace_id in b.trace_ids}
        with self._lock:
            for seq, spooled in live_batches:
                self._batch_seq[spooled.key] = seq
                self._segments[seq].live += 1
                recovery.batches.append(spooled)
            for trace_id, (seq, data) in traces.items():
                if trace_id in done_ids or trace_id in in_live_batches:
                    continue
                self._trace_seq[trace_id] = seq
                self._segments[seq].live += 1
                recovery.traces.append((trace_id, data))
            self._collect()
        for path, spooled in v1:
            if spooled.key in batches:
                # A kill between an upgrade's v2 record and the v1 file's removal left both: one batch.
                self._guard(path.unlink, missing_ok=True)
                continue
            # An upgrade: the v1 batch becomes a v2 record (same key, same bytes) before its file goes.
            self.batch(spooled.key, spooled.trace_ids, spooled.body)
            if not self.broken:
                self._guard(path.unlink, missing_ok=True)
            recovery.batches.append(spooled)
        return recovery

    def _lock_owner(self, owner: str) -> bool:
        """`<owner>.claim`, created exclusively, holds the claimer's pid; a claimer that died
        mid-claim leaves one that the next start takes over."""
        marker = self.directory / f"{owner}.claim"
        for _ in range(2):
            try:
                descriptor = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                try:
                    holder = int(marker.read_text() or "0")
                except (OSError, ValueError):
                    holder = 0
                if holder != os.getpid() and _pid_alive(holder):
                    return False
                self._guard(marker.unlink, missing_ok=True)
                continue
            except OSError:
                return False
            try:
                os.write(descriptor, str(os.getpid()).encode())
            finally:
                os.close(descriptor)
            return True
        return False

    def _remove_dead_temporaries(self) -> None:
        """`.<name>.<pid>.tmp` files of writers killed before their rename."""
        for path in self.directory.glob(".*.tmp"):
            pid = path.name.rsplit(".", 2)[-2]
            if pid.isascii() and pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
                self._guard(path.unlink, missing_ok=True)

    def _dead_owners(self) -> set[str]:
        try:
            names = [p.name for p in self.directory.iterdir()]
        except OSError:
            return set()
        dead = {n.split(".")[0] for n in names if n.endswith(".owner") and self._is_dead(self.directory / n)}
        data_owners = {n.split(".")[0] for n in names if (n.endswith(".seg") or n.endswith(".batch")) and not n.startswith(".")}
        dead |= {o for o in data_owners if f"{o}.owner" not in names}
        return dead - _owners_in_this_process - {self.owner}

    def _files_of(self, owners: set[str], suffix: str) -> list[Path]:
        return [p for p in self.directory.glob(f"*{suffix}") if p.name.split(".")[0] in owners and len(p.name.split(".")) == 3]

    def _claim(self, path: Path, target: Path) -> bool:
        try:
            os.rename(path, target)
            return True
        except OSError:
            return False  # another process claimed it first

    def _read_claimed(self, path: Path, recovery: Recovery) -> list[dict[str, Any]] | None:
        try:
            data = path.read_bytes()
        except OSError as error:
            self._quarantine(path, recovery, f"cannot be read ({error})")
            return None
        if not data.startswith(MAGIC):
            self._quarantine(path, recovery, "empty" if not data else "not a spool segment (no TISPOOL2 magic)")
            return None
        records, readable = read_segment(data)
        if readable < len(data):
            recovery.torn_records += 1
            notices.warn(
                ("torn_spool_record", str(self.directory)),
                "trace_ingest: spool segment %s ends in a torn record (a write cut short, or a record it cannot use); its %d readable records are recovered (logged at most once a minute)",
                path.name,
                len(records),
            )
            self._guard(os.truncate, path=path, length=readable)
        return records

    def _read_v1(self, path: Path, recovery: Recovery) -> tuple[Path, SpooledBatch] | None:
        try:
            header, newline, body = path.read_bytes().partition(b"\n")
            meta = json.loads(header)
            if not newline or not isinstance(meta.get("key"), str) or not isinstance(meta.get("trace_ids"), list):
                raise ValueError("no header line with key and trace_ids")
            return path, SpooledBatch(meta["key"], [str(i) for i in meta["trace_ids"]], body)
        except (OSError, ValueError, AttributeError) as error:
            self._quarantine(path, recovery, f"not a readable v1 batch ({error})")
            return None

    def _quarantine(self, path: Path, recovery: Recovery, why: str) -> None:
        recovery.unreadable_files += 1
        self._guard(os.rename, src=path, dst=path.with_name(path.name + ".unreadable"))
        notices.warn(
            ("unreadable_spool_file", str(self.directory)),
            "trace_ingest: spool file %s in %s is %s; renamed to %s.unreadable, which no start claims (the report's unreadable_spool_files counts every one; logged at most once a minute)",
            path.name,
            self.directory,
            why,
            path.name,
        )

    def _is_dead(self, owner_file: Path) -> bool:
        owner = owner_file.name.split(".")[0]
        if owner in _owners_in_this_process:
            return False
        try:
            text = owner_file.read_bytes().decode("utf-8", "replace")
            age = time.time() - owner_file.stat().st_mtime
        except OSError:
            return False
        try:
            pid = int(text or "0")
        except ValueError:
            pid = 0  # as in the TypeScript SDK: an owner file that names no process never keeps its segments
        return pid == os.getpid() or age > STALE_AFTER_SECONDS or not _pid_alive(pid)


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
    except OverflowError:
        # A pid past the C int range (a corrupt owner file) names no process; as TypeScript's kill treats it.
        return False
    return True


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)
