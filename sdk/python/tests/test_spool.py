"""The write-ahead spool (format v2, docs/sdk.md): what is handed over survives `kill -9`, a torn or
foreign file never stops a start, and v1 `.batch` files are still recovered."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from trace_ingest import TraceIngest
from trace_ingest._policy import Answer
from trace_ingest._spool import MAGIC, Spool, _owners_in_this_process, frame, read_segment

from .conftest import CONFORMANCE, Recorder, conformance
from .fake_service import FakeService
from .test_client import SRC, run_python, traces

DEAD_OWNER = "0" * 32


def trace_record(trace_id: str) -> bytes:
    return frame(json.dumps({"t": "trace", "id": trace_id, "trace": {"trace_id": trace_id, "spans": []}}).encode())


def test_a_trace_is_on_disk_once_handed_over_and_the_files_go_once_it_is_delivered(tmp_path: Path, recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path, spool_sync="write")
    [trace_id] = traces(client, 1)
    [segment] = tmp_path.glob("*.seg")
    assert trace_id.encode() in segment.read_bytes() and segment.read_bytes().startswith(MAGIC)
    client.flush()
    assert list(tmp_path.glob("*.seg")) == []
    client.shutdown()
    assert list(tmp_path.iterdir()) == []


def test_with_the_interval_setting_a_trace_reaches_the_file_without_any_further_call(tmp_path: Path, recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path, spool_interval=0.01)
    [trace_id] = traces(client, 1)
    deadline = time.monotonic() + 20
    while not any(trace_id.encode() in p.read_bytes() for p in tmp_path.glob("*.seg")):
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_dead_owners_traces_and_batches_are_recovered_and_sent_once_with_the_batch_keeping_its_key(tmp_path: Path) -> None:
    spool = Spool(tmp_path, "write")
    spool.trace("loose", b'{"trace_id":"loose"}')
    spool.trace("in-batch", b'{"trace_id":"in-batch"}')
    spool.trace("delivered", b'{"trace_id":"delivered"}')
    spool.batch("key-1", ["in-batch"], b'{"traces":[{"trace_id":"in-batch"}]}')
    spool.batch("key-2", ["delivered"], b'{"traces":[{"trace_id":"delivered"}]}')
    spool.done("key-2", ["delivered"])
    (tmp_path / f"{spool.owner}.owner").write_text("999999999")  # the owner is gone
    _owners_in_this_process.discard(spool.owner)
    recorder = Recorder()
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path)
    report = client.flush()
    assert (report.recovered, report.sent, report.pending) == (2, 2, 0)
    assert [(r["headers"]["idempotency-key"], [t["trace_id"] for t in r["body"]["traces"]]) for r in recorder.requests][0] == ("key-1", ["in-batch"])
    assert sorted(recorder.trace_ids) == ["in-batch", "loose"]
    client.shutdown()
    assert list(tmp_path.iterdir()) == []


def test_a_torn_tail_is_skipped_and_counted_and_the_records_before_it_are_recovered(tmp_path: Path) -> None:
    (tmp_path / f"{DEAD_OWNER}.00000001.seg").write_bytes(MAGIC + trace_record("a") + trace_record("b") + trace_record("c")[:-5])
    recorder = Recorder()
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path)
    report = client.flush()
    assert (report.recovered, report.sent, report.torn_spool_records, report.unreadable_spool_files) == (2, 2, 1, 0)
    assert sorted(recorder.trace_ids) == ["a", "b"]


def test_a_record_whose_checksum_fails_ends_the_readable_part(tmp_path: Path) -> None:
    bad = bytearray(trace_record("b"))
    bad[-3] ^= 0xFF
    (tmp_path / f"{DEAD_OWNER}.00000001.seg").write_bytes(MAGIC + trace_record("a") + bytes(bad) + trace_record("c"))
    client = TraceIngest("tik_x", transport=Recorder(), serverless=True, spool_dir=tmp_path)
    report = client.flush()
    assert (report.recovered, report.torn_spool_records) == (1, 1)


SPOOL_RECORDS = conformance("spool-records.json")


def test_there_are_spool_record_vectors() -> None:
    # The two tests below are parametrized over them: an empty list would make them pass by running nothing.
    assert SPOOL_RECORDS["torn"] and SPOOL_RECORDS["read_past"]


@pytest.mark.parametrize("case", SPOOL_RECORDS["torn"], ids=lambda case: case["case"])
def test_a_whole_record_both_sdks_cannot_use_ends_the_readable_part(case: dict[str, str]) -> None:
    # sdk/conformance/spool-records.json: the TypeScript SDK's tests read the same cases.
    records, readable = read_segment(MAGIC + trace_record("a") + frame(case["payload"].encode()) + trace_record("c"))
    assert ([r["id"] for r in records], readable) == (["a"], len(MAGIC) + len(trace_record("a")))


@pytest.mark.parametrize("case", SPOOL_RECORDS["read_past"], ids=lambda case: case["case"])
def test_a_record_of_a_kind_this_version_does_not_know_is_read_past(case: dict[str, str]) -> None:
    data = MAGIC + trace_record("a") + frame(case["payload"].encode()) + trace_record("c")
    records, readable = read_segment(data)
    assert ([r.get("id") for r in records], readable) == (["a", None, "c"], len(data))


def test_a_trace_id_that_is_not_a_string_is_dropped_at_hand_over_and_never_reaches_the_spool(tmp_path: Path, recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path, spool_sync="write")
    with client.trace("bad", trace_id=123):  # type: ignore[arg-type]
        pass
    [good] = traces(client, 1)
    records = [r for seg in sorted(tmp_path.glob("*.seg")) for r in read_segment(seg.read_bytes())[0]]
    assert [r["id"] for r in records if r["t"] == "trace"] == [good]
    report = client.flush()
    assert (report.dropped, recorder.trace_ids) == ({"not_serialisable": 1}, [good])
    client.shutdown()


def test_unreadable_files_are_quarantined_counted_logged_and_never_claimed_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / f"{DEAD_OWNER}.00000001.seg").write_bytes(b"")
    (tmp_path / f"{DEAD_OWNER}.00000002.seg").write_bytes(b"not a spool segment at all")
    (tmp_path / f"{DEAD_OWNER}.somekey.batch").write_bytes(b"\x00\xff garbage")
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        client = TraceIngest("tik_x", transport=Recorder(), serverless=True, spool_dir=tmp_path)
    assert client.report().unreadable_spool_files == 3 and client.report().recovered == 0
    assert len(list(tmp_path.glob("*.unreadable"))) == 3
    assert sum("unreadable" in r.getMessage() for r in caplog.records) == 1  # once per cause per minute
    client.shutdown()
    again = TraceIngest("tik_x", transport=Recorder(), serverless=True, spool_dir=tmp_path)
    assert again.report().unreadable_spool_files == 0 and len(list(tmp_path.glob("*.unreadable"))) == 3


def batch_record(key: str, trace_ids: list[str]) -> bytes:
    body = json.dumps({"traces": [{"trace_id": i, "spans": []} for i in trace_ids]})
    return frame(json.dumps({"t": "batch", "key": key, "ids": trace_ids, "body": body}).encode())


def test_a_batch_whose_traces_reappear_in_later_batches_was_split_and_only_its_parts_are_resent(tmp_path: Path) -> None:
    # A crash lost the parent's `done` (written after its children's `batch` records): resending
    # the parent too would store a, b, c and d twice until compaction.
    records = [trace_record(i) for i in "abcd"] + [batch_record("parent", list("abcd")), batch_record("child-1", list("ab")), batch_record("child-2", list("cd"))]
    (tmp_path / f"{DEAD_OWNER}.00000001.seg").write_bytes(MAGIC + b"".join(records))
    recorder = Recorder()
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path)
    report = client.flush()
    assert sorted((r["headers"]["idempotency-key"], tuple(t["trace_id"] for t in r["body"]["traces"])) for r in recorder.requests) == [("child-1", ("a", "b")), ("child-2", ("c", "d"))]
    assert (report.recovered, report.sent, report.pending) == (4, 4, 0)
    client.shutdown()
    assert list(tmp_path.iterdir()) == []


def test_a_v1_batch_file_is_recovered_with_its_key_and_exact_bytes(tmp_path: Path) -> None:
    body = b'{"traces":[{"trace_id":"t1"},{"trace_id":"t2"}]}'
    (tmp_path / f"{DEAD_OWNER}.v1key.batch").write_bytes(json.dumps({"key": "v1key", "trace_ids": ["t1", "t2"]}).encode() + b"\n" + body)
    recorder = Recorder()
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path)
    assert client.flush().sent == 2
    import gzip

    assert recorder.requests[0]["headers"]["idempotency-key"] == "v1key" and gzip.decompress(recorder.requests[0]["raw"]) == body
    client.shutdown()
    assert list(tmp_path.iterdir()) == []


def test_a_v1_batch_file_left_beside_its_upgraded_record_is_one_batch_sent_once(tmp_path: Path) -> None:
    # A kill after the upgrade wrote the v2 record and before the v1 file went.
    body = '{"traces":[{"trace_id":"t1","spans":[]},{"trace_id":"t2","spans":[]}]}'
    upgraded = frame(json.dumps({"t": "batch", "key": "v1key", "ids": ["t1", "t2"], "body": body}).encode())
    (tmp_path / f"{DEAD_OWNER}.00000001.seg").write_bytes(MAGIC + upgraded)
    (tmp_path / f"{DEAD_OWNER}.v1key.batch").write_bytes(json.dumps({"key": "v1key", "trace_ids": ["t1", "t2"]}).encode() + b"\n" + body.encode())
    recorder = Recorder()
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path)
    report = client.flush()
    assert [r["headers"]["idempotency-key"] for r in recorder.requests] == ["v1key"]
    assert (report.recovered, report.sent, report.pending) == (2, 2, 0)
    client.shutdown()
    assert list(tmp_path.iterdir()) == []


def test_an_unusable_spool_dir_turns_the_spool_off_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture, recorder: Recorder) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=blocker / "spool")
    assert client._spool is None and any("spool is off" in r.getMessage() for r in caplog.records)
    traces(client, 2)
    assert client.flush().sent == 2


def test_a_spool_that_fails_while_running_turns_off_and_delivery_goes_on(tmp_path: Path, caplog: pytest.LogCaptureFixture, recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path / "spool", spool_sync="write")
    traces(client, 1)
    client._spool._fd = os.open(os.devnull, os.O_RDONLY)  # type: ignore[union-attr]  # the disk now refuses every write
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        traces(client, 2)
    assert client.flush().sent == 3
    assert any("spool is off" in r.getMessage() for r in caplog.records)
    assert list((tmp_path / "spool").iterdir()) == []  # nothing left for a later start to send again


def test_a_segment_rolls_over_and_done_segments_go_oldest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("trace_ingest._spool.SEGMENT_BYTES", 400)
    spool = Spool(tmp_path, "write")
    for n in range(6):
        spool.trace(f"t{n}", b'{"trace_id":"t%d","pad":"%s"}' % (n, b"x" * 150))
    assert len(list(tmp_path.glob("*.seg"))) >= 3
    spool.done(None, ["t5", "t4", "t3"])
    assert len(list(tmp_path.glob("*.seg"))) >= 3  # a later segment holds the done of an older one's record: kept
    spool.done(None, ["t0", "t1", "t2"])
    assert list(tmp_path.glob("*.seg")) == []


def test_a_live_process_keeps_its_files(tmp_path: Path) -> None:
    holder = TraceIngest("tik_x", transport=Recorder(answer=lambda t: Answer(503, {}, {"code": "unavailable"})), serverless=True, spool_dir=tmp_path, spool_sync="write")
    traces(holder, 2)
    other = TraceIngest("tik_x", transport=Recorder(), serverless=True, spool_dir=tmp_path)
    assert other.report().recovered == 0 and len(list(tmp_path.glob(f"{holder._spool.owner}.*.seg"))) == 1  # type: ignore[union-attr]


def test_a_spool_busy_writing_keeps_its_owner_file_fresh(tmp_path: Path) -> None:
    # Staleness is read from the owner file's age: one that only idle waits refresh looks dead to another
    # process while its owner is busy sending, and that process would send its batches again.
    spool = Spool(tmp_path, "write")
    owner_file = tmp_path / f"{spool.owner}.owner"
    long_ago = time.time() - 61
    os.utime(owner_file, (long_ago, long_ago))
    spool._beat = time.monotonic() - 11
    spool.batch("k1", ["t1"], b"{}")
    assert time.time() - owner_file.stat().st_mtime < 5


# --- fixtures written by each SDK (sdk/conformance/spool-fixtures/<language>/<case>/) ---------------

FIXTURES = CONFORMANCE / "spool-fixtures"


def fixture_dirs() -> list[Path]:
    return sorted(p.parent for p in FIXTURES.glob("*/*/expected.json"))


def test_there_are_spool_fixtures() -> None:
    # Both languages' fixtures, or a missing directory would let the parametrized test run fewer cases than it claims.
    languages = {fixture.parent.name for fixture in fixture_dirs()}
    assert {"python", "typescript"} <= languages, f"fixtures of {sorted(languages)} only under {FIXTURES}"


@pytest.mark.parametrize("fixture", fixture_dirs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_spool_fixture_is_recovered_as_expected(fixture: Path, tmp_path: Path) -> None:
    expected = json.loads((fixture / "expected.json").read_text())
    for path in fixture.iterdir():
        if path.name != "expected.json":
            shutil.copy(path, tmp_path / path.name)
    recorder = Recorder()
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path)
    report = client.flush()
    # `recovered` is required; the other fields are checked when the fixture gives them.
    assert (report.recovered, report.sent, report.pending) == (expected["recovered"], expected["recovered"], 0)
    for field in ("unreadable_spool_files", "torn_spool_records"):
        if field in expected:
            assert getattr(report, field) == expected[field], field
    if "trace_ids" in expected:
        assert sorted(recorder.trace_ids) == sorted(expected["trace_ids"])
    keys = {r["headers"]["idempotency-key"]: sorted(t["trace_id"] for t in r["body"]["traces"]) for r in recorder.requests}
    for key, ids in expected.get("batches", {}).items():
        assert keys.get(key) == sorted(ids), key


# --- kill -9 at random moments ----------------------------------------------------------------------

CHILD = Path(__file__).resolve().parent / "handing_child.py"


def handed_over(log: Path) -> list[tuple[str, float]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [(line.split()[0], float(line.split()[1])) for line in lines if len(line.split()) == 2]


@pytest.mark.parametrize("sync,slack,rounds", [("write", 0.0, 3), ("interval", 1.0, 2)])
def test_kill_9_at_random_moments_loses_nothing_handed_over_before_the_interval_and_sends_nothing_twice(tmp_path: Path, sync: str, slack: float, rounds: int) -> None:
    """A child hands traces over without pause to a slow service and is killed at a random moment;
    a new client on the directory then sends what was left. Every trace handed over before
    (kill − slack) is stored (by one of the two) under exactly one Idempotency-Key. With the
    interval setting the slack is 1 s, 10 × the 100 ms interval, so a busy machine cannot fail it;
    the bench measures the real window (rows "spool … lost")."""
    rng = random.Random()

    def answer(batch: list[dict[str, Any]], key: str) -> tuple[int, dict[str, Any]]:
        time.sleep(rng.uniform(0, 0.02))
        if rng.random() < 0.1:
            return 503, {"code": "unavailable"}
        return 200, {"accepted": len(batch), "rejected": 0, "errors": []}

    service = FakeService(answer)
    try:
        for round_ in range(rounds):
            spool, log = tmp_path / f"spool-{round_}", tmp_path / f"log-{round_}"
            child = subprocess.Popen(
                [sys.executable, str(CHILD), service.url, str(spool), sync, str(log), "50"], env={**os.environ, "PYTHONPATH": SRC}
            )
            deadline = time.monotonic() + 30
            while len(handed_over(log)) < 5:
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.5) + slack)
            killed_at = time.monotonic()
            child.send_signal(signal.SIGKILL)
            child.wait()
            result = run_python(
                f"""
                from trace_ingest import TraceIngest
                client = TraceIngest("tik_x", "{service.url}", spool_dir={str(spool)!r})
                r = client.flush(60)
                print(r.recovered, r.pending)
                """
            )
            assert result.returncode == 0, result.stderr
            assert result.stdout.split()[1] == "0"
            keys_of: dict[str, set[str]] = {}
            with service.lock:
                for key, ids, status in service.requests:
                    if status == 200:
                        for trace_id in ids:
                            keys_of.setdefault(trace_id, set()).add(key)
            before = [trace_id for trace_id, at in handed_over(log) if at < killed_at - slack]
            assert before, "the child handed nothing over before the kill"
            assert [t for t in before if t not in keys_of] == [], f"round {round_}: lost"
            assert {t: k for t, k in keys_of.items() if len(k) > 1} == {}, f"round {round_}: stored twice"
            assert [p.name for p in spool.iterdir()] == []
    finally:
        service.close()


def test_a_dead_owner_being_claimed_by_a_live_process_is_left_to_it(tmp_path: Path) -> None:
    # A done in one segment closes a record in another: two starters splitting one owner's files
    # would each resend what the other's half had closed.
    (tmp_path / f"{DEAD_OWNER}.00000001.seg").write_bytes(MAGIC + trace_record("a"))
    (tmp_path / f"{DEAD_OWNER}.00000002.seg").write_bytes(MAGIC + frame(json.dumps({"t": "done", "key": None, "ids": ["a"]}).encode()))
    (tmp_path / f"{DEAD_OWNER}.claim").write_text(str(os.getppid()))  # a live claimer
    assert TraceIngest("tik_x", transport=Recorder(), serverless=True, spool_dir=tmp_path).report().recovered == 0
    assert len(list(tmp_path.glob(f"{DEAD_OWNER}.*.seg"))) == 2
    (tmp_path / f"{DEAD_OWNER}.claim").write_text("999999999")  # the claimer died mid-claim
    recorder = Recorder()
    client = TraceIngest("tik_x", transport=recorder, serverless=True, spool_dir=tmp_path)
    assert (client.flush().recovered, recorder.requests) == (0, [])
    assert list(tmp_path.glob(f"{DEAD_OWNER}.*")) == []


def test_a_dead_owners_segments_are_claimed_oldest_first_and_an_answer_in_a_later_segment_survives_a_second_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Claimed newest first, the traces would come back out of order, and the segment holding only the `done` of an
    # older segment's trace would get the older number: deleted first, that trace would come back after a second crash.
    monkeypatch.setattr("trace_ingest._spool.SEGMENT_BYTES", 400)

    def abandon(spool: Spool) -> None:
        (tmp_path / f"{spool.owner}.owner").write_text("999999999")  # the owner is gone
        _owners_in_this_process.discard(spool.owner)

    spool = Spool(tmp_path, "write")
    for trace_id in ("t0", "t1", "t2"):  # t2 starts the second segment
        spool.trace(trace_id, b'{"trace_id":"%s","pad":"%s"}' % (trace_id.encode(), b"x" * 100))
    spool.done(None, ["t0", "t2"])  # in the second segment; the first is kept for t1
    spool.trace("t3", b'{"trace_id":"t3","pad":"%s"}' % (b"x" * 100))
    segments = sorted(tmp_path.glob("*.seg"))
    assert len(segments) == 2 and b'"t1"' in segments[0].read_bytes() and b'"t3"' in segments[1].read_bytes()
    abandon(spool)
    first = Spool(tmp_path, "write")
    assert [trace_id for trace_id, _ in first.claim_orphans().traces] == ["t1", "t3"]
    abandon(first)  # killed before it sent anything
    second = Spool(tmp_path, "write")
    assert [trace_id for trace_id, _ in second.claim_orphans().traces] == ["t1", "t3"]


def test_dead_owners_are_claimed_oldest_first_whatever_their_names(tmp_path: Path) -> None:
    # The shared format (docs/sdk.md): a start claims the owners that are gone oldest first, so what was handed
    # over first is resent first. Owner names are random: their order says nothing of age.
    older, newer = "f" * 32, "1" * 32
    for owner, trace_ids, age in ((newer, ("n1", "n2"), 100), (older, ("o1", "o2"), 200)):
        for seq, trace_id in enumerate(trace_ids, start=1):
            segment = tmp_path / f"{owner}.{seq:08d}.seg"
            segment.write_bytes(MAGIC + frame(json.dumps({"t": "trace", "id": trace_id, "trace": {"trace_id": trace_id}}).encode()))
            stamp = time.time() - age + seq
            os.utime(segment, (stamp, stamp))
    spool = Spool(tmp_path, "write")
    assert [trace_id for trace_id, _ in spool.claim_orphans().traces] == ["o1", "o2", "n1", "n2"]


def orphan(directory: Path, owner: str, trace_ids: list[str], pid: str | None = None) -> None:
    """A dead owner's files: a segment holding `trace_ids`, and an owner file holding `pid` (none when None)."""
    (directory / f"{owner}.00000001.seg").write_bytes(MAGIC + b"".join(trace_record(i) for i in trace_ids))
    if pid is not None:
        (directory / f"{owner}.owner").write_text(pid)


def recovered_ids(directory: Path) -> tuple[Spool, list[str]]:
    spool = Spool(directory, "write")
    return spool, [trace_id for trace_id, _ in spool.claim_orphans().traces]


def test_an_owner_whose_process_lives_keeps_its_files_until_its_owner_file_is_more_than_60_s_old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    orphan(tmp_path, "other", ["t1"], str(os.getppid()))  # the process that started these tests: alive
    (tmp_path / "idle.owner").write_text(str(os.getppid()))  # alive, no segment yet
    # The spool's clock is mocked (an hour ago) and other.owner's time set to it: no stall of the machine makes it stale.
    seconds = int(time.time()) - 3_600
    os.utime(tmp_path / "other.owner", (seconds, seconds))
    before = sorted(p.name for p in tmp_path.iterdir())

    def at(now: float) -> list[str]:
        monkeypatch.setattr("trace_ingest._spool.time", SimpleNamespace(time=lambda: now, monotonic=time.monotonic, perf_counter=time.perf_counter))
        spool, ids = recovered_ids(tmp_path)
        spool.close()
        return ids

    assert at(seconds + 1) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert at(seconds + 60) == []
    assert at(seconds + 60.001) == ["t1"]
    assert (tmp_path / "idle.owner").exists() and not (tmp_path / "other.owner").exists()


@pytest.mark.parametrize("pid", [str(os.getpid()), "0", "", "not a pid", str(2**31 - 1), "99999999999"], ids=["own pid, no spool of ours", "0", "empty", "not a number", "no such process", "past the int range"])
def test_an_owner_whose_pid_is_ours_but_no_spool_of_this_process_or_no_live_process_has_its_files_taken(tmp_path: Path, pid: str) -> None:
    # The TypeScript SDK takes them too (spool.files.test.ts): an owner file that names no live process never keeps its segments.
    orphan(tmp_path, "gone", ["t1"], pid)
    (tmp_path / "idle.owner").write_text(pid)  # no segment: only its owner file, removed
    spool, ids = recovered_ids(tmp_path)
    assert ids == ["t1"]
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(spool.owner)] == []
