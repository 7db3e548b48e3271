"""The delivery core on its own, with a spool that records what it is told (the TypeScript SDK's
delivery.test.ts tests its twin the same way)."""

from __future__ import annotations

from typing import Mapping, Sequence

from trace_ingest._delivery import Batch, Deliverer
from trace_ingest._ledger import Ledger
from trace_ingest._policy import Answer

from .conftest import Recorder


class Events:
    """A spool that records what it is told, in order, with the requests sent."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def batch(self, key: str, trace_ids: list[str], body: bytes) -> None:
        self.log.append(f"write {key} {','.join(trace_ids)}")

    def done(self, key: str | None, trace_ids: Sequence[str]) -> None:
        self.log.append(f"done {key} [{','.join(trace_ids)}]")


def item(trace_id: str) -> tuple[str, bytes]:
    return trace_id, f'{{"trace_id":"{trace_id}"}}'.encode()


def test_a_failure_of_its_own_drops_what_it_left_unsettled_as_internal_error_closes_it_in_the_spool_and_never_raises() -> None:
    events = Events()
    recorder = Recorder([Answer(413, {}, {"code": "batch_too_large"})])

    class FailingThirdPost:
        calls = 0

        def post(self, body: bytes, headers: Mapping[str, str]) -> Answer:
            events.log.append(f"post {headers['Idempotency-Key']}")
            self.calls += 1
            if self.calls == 3:
                raise RuntimeError("boom")
            return recorder.post(body, headers)

    ledger = Ledger()
    ledger.hand(4)
    deliverer = Deliverer(FailingThirdPost(), "tik_x", ledger, lambda seconds: True, spool=events, jitter=lambda: 0)  # type: ignore[arg-type]
    assert deliverer.deliver(Batch.of([item(i) for i in "abcd"], "k")) == []
    report = ledger.report()
    assert (report.sent, report.dropped, report.pending) == (2, {"internal_error": 2}, 0)
    right = next(line.split(" ")[1] for line in events.log if line.startswith("write ") and line.endswith(" c,d"))
    assert events.log[-1] == f"done {right} [c,d]"
