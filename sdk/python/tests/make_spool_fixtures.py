"""Writes sdk/conformance/spool-fixtures/python/: spool directories as this SDK leaves them after a
`kill -9`, with the expected.json that every SDK's recovery test checks (run it from sdk/python:
`PYTHONPATH=src python3 -m tests.make_spool_fixtures`)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from trace_ingest._spool import Spool, _owners_in_this_process, frame

OUT = Path(__file__).resolve().parents[2] / "conformance" / "spool-fixtures" / "python"
DEAD = "deadbeefdeadbeefdeadbeefdeadbeef"
V1_OWNER = "0badc0de0badc0de0badc0de0badc0de"


def trace(trace_id: str) -> bytes:
    return json.dumps({"trace_id": trace_id, "root_span_name": "fixture", "spans": []}, separators=(",", ":")).encode()


def body(ids: list[str]) -> bytes:
    return b'{"traces":[' + b",".join(trace(i) for i in ids) + b"]}"


def written(case: str, fill: "callable[[Spool], None]") -> Path:  # type: ignore[valid-type]
    with tempfile.TemporaryDirectory() as scratch:
        spool = Spool(scratch, "write")
        fill(spool)
        target = OUT / case
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for path in Path(scratch).glob("*.seg"):
            shutil.copy(path, target / path.name.replace(spool.owner, DEAD))
        _owners_in_this_process.discard(spool.owner)
        return target


def mixed(spool: Spool) -> None:
    ids = [f"00000000-0000-4000-8000-00000000000{n}" for n in range(1, 6)]
    for trace_id in ids:
        spool.trace(trace_id, trace(trace_id))
    spool.batch("fixture-key-live", ids[:2], body(ids[:2]))
    spool.batch("fixture-key-done", ids[2:3], body(ids[2:3]))
    spool.done("fixture-key-done", ids[2:3])


def main() -> None:
    target = written("mixed", mixed)
    [segment] = target.glob("*.seg")
    torn = frame(json.dumps({"t": "trace", "id": "00000000-0000-4000-8000-000000000009", "trace": json.loads(trace("torn"))}).encode())
    segment.write_bytes(segment.read_bytes() + torn[: len(torn) // 2])
    v1_ids = ["00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000a2"]
    (target / f"{V1_OWNER}.fixture-key-v1.batch").write_bytes(json.dumps({"key": "fixture-key-v1", "trace_ids": v1_ids}).encode() + b"\n" + body(v1_ids))
    live = ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"]
    loose = ["00000000-0000-4000-8000-000000000004", "00000000-0000-4000-8000-000000000005"]
    expected = {
        "comment": "A dead owner's v2 segment (two loose traces, a live batch, a done batch, a torn tail) and a v1 .batch file of another dead owner.",
        "recovered": 6,
        "trace_ids": live + loose + v1_ids,
        "batches": {"fixture-key-live": live, "fixture-key-v1": v1_ids},
        "unreadable_spool_files": 0,
        "torn_spool_records": 1,
    }
    (target / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")

    unreadable = OUT / "unreadable"
    shutil.rmtree(unreadable, ignore_errors=True)
    unreadable.mkdir(parents=True)
    (unreadable / f"{DEAD}.00000001.seg").write_bytes(b"")
    (unreadable / f"{DEAD}.00000002.seg").write_bytes(b"PK\x03\x04 not a spool segment")
    (unreadable / f"{V1_OWNER}.broken.batch").write_bytes(b"\xff\xfe no header line")
    (unreadable / "expected.json").write_text(
        json.dumps(
            {
                "comment": "A zero-length segment, a segment without the magic, a v1 file without a header: each quarantined, nothing recovered.",
                "recovered": 0,
                "trace_ids": [],
                "batches": {},
                "unreadable_spool_files": 3,
                "torn_spool_records": 0,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
