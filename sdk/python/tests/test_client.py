from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from trace_ingest import DeliveryReport, TraceIngest, Undelivered, current_span
from trace_ingest._policy import Answer

from .conftest import Recorder
from .fake_service import FakeService

SRC = str(Path(__file__).resolve().parents[1] / "src")


def traces(client: TraceIngest, count: int, name: str = "t") -> list[str]:
    ids = []
    for _ in range(count):
        with client.trace(name) as trace:
            with client.span("s"):
                pass
        ids.append(trace.trace_id)
    return ids


def test_batches_hold_at_most_500_traces_and_every_trace_is_sent_once(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, flush_interval=60)
    ids = traces(client, 1234)
    report = client.flush(10)
    assert sorted(recorder.trace_ids) == sorted(ids)
    assert max(len(r["body"]["traces"]) for r in recorder.requests) == 500
    assert (report.handed, report.sent, report.pending) == (1234, 1234, 0)


def test_a_batch_never_exceeds_the_body_ceiling(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, max_body_bytes=20_000, serverless=True)
    for _ in range(30):
        with client.trace("big") as trace:
            trace.update(attributes={"pad": "x" * 2000})
    client.flush()
    assert len(recorder.requests) > 1
    import gzip

    assert all(len(gzip.decompress(r["raw"])) <= 20_000 for r in recorder.requests)
    assert len(recorder.trace_ids) == 30


def test_a_trace_larger_than_a_batch_may_hold_is_dropped_and_counted(recorder: Recorder) -> None:
    seen: list[Undelivered] = []
    client = TraceIngest("tik_x", transport=recorder, max_body_bytes=5_000, serverless=True, on_undelivered=seen.append)
    with client.trace("huge", attributes={"pad": "x" * 6000}) as huge:
        pass
    report = client.flush()
    assert report.dropped == {"trace_too_large": 1} and recorder.requests == []
    assert seen[0].trace_ids == (huge.trace_id,) and seen[0].outcome == "dropped"


def test_a_full_queue_drops_the_newest_and_counts_them() -> None:
    gate, holding = threading.Event(), threading.Event()
    recorder = Recorder(answer=lambda t: (holding.set(), gate.wait(), Answer(200, {}, {"accepted": len(t), "rejected": 0, "errors": []}))[2])
    # A batch forms only when full (the interval is longer than the test): the held batch is exactly the first 5
    # traces however slowly this thread hands them over (with a short interval a loaded machine sent a partial one).
    client = TraceIngest("tik_x", transport=recorder, max_queue_traces=10, max_batch_traces=5, flush_interval=600)
    traces(client, 5)
    assert holding.wait(20)  # the worker holds the first batch at the gate
    assert [len(request["body"]["traces"]) for request in recorder.requests] == [5]
    traces(client, 15)
    report = client.report()
    assert report.dropped == {"queue_full": 5}
    gate.set()
    report = client.flush(10)
    assert (report.sent, report.dropped, report.pending) == (15, {"queue_full": 5}, 0)
    assert report.accounted


def test_a_full_queue_blocks_the_caller_up_to_its_timeout_when_asked_to() -> None:
    def full_client(block_timeout: float) -> tuple[TraceIngest, threading.Event]:
        gate, holding = threading.Event(), threading.Event()
        recorder = Recorder(answer=lambda t: (holding.set(), gate.wait(), Answer(200, {}, {"accepted": len(t), "rejected": 0, "errors": []}))[2])
        client = TraceIngest("tik_x", transport=recorder, max_queue_traces=2, max_batch_traces=1, flush_interval=0.01, when_full="block", block_timeout=block_timeout)
        traces(client, 1)
        assert holding.wait(20)  # the worker holds the first trace at the gate
        traces(client, 2)  # the queue is full
        return client, gate

    client, gate = full_client(0.3)
    started = time.monotonic()
    traces(client, 1)  # waits for room, then gives up
    assert time.monotonic() - started >= 0.29
    assert client.report().dropped == {"queue_full": 1}
    gate.set()

    client, gate = full_client(60)
    threading.Timer(0.1, gate.set).start()
    traces(client, 1)  # room appears while it waits
    report = client.flush(10)
    assert (report.sent, report.dropped) == (4, {})


def test_threads_share_one_client_and_the_accounting_is_exact() -> None:
    recorder = Recorder(answer=lambda t: Answer(200, {}, {"accepted": len(t) - 1, "rejected": 1, "errors": [{"index": 0, "issues": [{"code": "invalid_enum"}]}]}))
    client = TraceIngest("tik_x", transport=recorder, flush_interval=0.01)
    with ThreadPoolExecutor(8) as pool:
        handed = sum(len(ids) for ids in pool.map(lambda _: traces(client, 250), range(8)))
    report = client.flush(10)
    assert handed == 2000 and len(set(recorder.trace_ids)) == 2000
    assert report.sent + report.rejected["invalid_enum"] == 2000 and report.rejected["invalid_enum"] == len(recorder.requests)


def test_async_tasks_keep_their_own_span_stacks(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True)

    @client.observe(kind="tool")
    async def lookup(n: int) -> int:
        await asyncio.sleep(0.01)
        assert current_span() is not None and current_span().name.endswith("lookup")
        return n * 2

    async def main() -> None:
        async with client.trace("agent"):
            async with client.span("fan-out", kind="chain") as parent:
                results = await asyncio.gather(*(lookup(i) for i in range(5)))
        assert results == [0, 2, 4, 6, 8]
        assert parent.duration_ms is not None

    asyncio.run(main())
    client.flush()
    spans = recorder.requests[0]["body"]["traces"][0]["spans"]
    fan_out = spans[0]["span_id"]
    assert [s["parent_span_id"] for s in spans[1:]] == [fan_out] * 5
    assert sorted(s["input"] for s in spans[1:]) == sorted(f'{{"n":{i}}}' for i in range(5))
    assert sorted(s["output"] for s in spans[1:]) == ["0", "2", "4", "6", "8"]


def test_the_decorator_opens_a_trace_when_none_is_open_and_rethrows_untouched(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    error = KeyError("missing")

    @client.observe()
    def fails() -> None:
        raise error

    with pytest.raises(KeyError) as caught:
        fails()
    assert caught.value is error
    client.flush()
    trace = recorder.requests[0]["body"]["traces"][0]
    assert trace["status"] == "error" and trace["spans"][0]["status"] == "error"
    assert trace["spans"][0]["error_message"] == "KeyError: 'missing'"


def test_a_failing_mask_drops_the_trace_rather_than_sending_it_unmasked(recorder: Recorder) -> None:
    def mask(field: str, value: object) -> object:
        raise RuntimeError("bad mask")

    client = TraceIngest("tik_x", transport=recorder, serverless=True, mask=mask)
    traces(client, 1)
    assert client.flush().dropped == {"not_serialisable": 1} and recorder.requests == []


def test_serverless_mode_sends_only_inside_flush(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    traces(client, 3)
    time.sleep(0.05)
    assert recorder.requests == [] and threading.active_count() >= 1 and client._thread is None
    assert client.flush().sent == 3 and len(recorder.requests) == 1


def test_shutdown_returns_by_its_timeout_and_reports_what_is_still_pending() -> None:
    recorder = Recorder(answer=lambda t: Answer(503, {"retry-after": "30"}, {"code": "unavailable"}))
    client = TraceIngest("tik_x", transport=recorder, flush_interval=0.01)
    traces(client, 3)
    started = time.monotonic()
    report = client.shutdown(0.5)
    assert time.monotonic() - started < 10  # by its timeout, not after the 30 s Retry-After
    assert (report.sent, report.pending) == (0, 3)
    traces(client, 1)
    assert client.report().dropped == {"shut_down": 1}


def test_configuration_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACE_INGEST_API_KEY", "tik_env")
    monkeypatch.setenv("TRACE_INGEST_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("TRACE_INGEST_ENVIRONMENT", "prod")
    client = TraceIngest(serverless=True)
    assert client._api_key == "tik_env" and client.environment == "prod"
    monkeypatch.delenv("TRACE_INGEST_API_KEY")
    with pytest.raises(ValueError, match="TRACE_INGEST_API_KEY"):
        TraceIngest()


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 30, args: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *(args or [])],
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_atexit_flushes_what_the_program_queued() -> None:
    service = FakeService()
    try:
        result = run_python(
            f"""
            from trace_ingest import TraceIngest
            client = TraceIngest("tik_x", "{service.url}", flush_interval=60)
            for i in range(7):
                with client.trace("t"):
                    pass
            """
        )
        assert result.returncode == 0, result.stderr
        assert len(service.delivered()) == 7
    finally:
        service.close()


def test_sigterm_flushes_only_when_the_user_opted_in() -> None:
    service = FakeService()
    program = f"""
        import os, signal, sys, time
        from trace_ingest import TraceIngest
        client = TraceIngest("tik_x", "{service.url}", flush_interval=60, handle_signals=sys.argv[1] == "yes")
        for i in range(4):
            with client.trace("t"):
                pass
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        """
    try:
        for opt_in, expected in (("no", 0), ("yes", 4)):
            result = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(program), opt_in], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=30
            )
            assert result.returncode == -signal.SIGTERM, result.stderr
            assert len(service.delivered()) == expected
            service.requests.clear()
    finally:
        service.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_sends_its_own_traces_and_never_its_parents() -> None:
    service = FakeService()
    try:
        result = run_python(
            f"""
            import os, json, sys
            from trace_ingest import TraceIngest
            client = TraceIngest("tik_x", "{service.url}", flush_interval=60)
            with client.trace("parent-before-fork"):
                pass
            pid = os.fork()
            if pid == 0:
                with client.trace("child"):
                    pass
                report = client.flush(10)
                print(json.dumps({{"child": [report.handed, report.sent]}}), flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
            with client.trace("parent-after-fork"):
                pass
            report = client.flush(10)
            print(json.dumps({{"parent": [report.handed, report.sent]}}), flush=True)
            """
        )
        assert result.returncode == 0, result.stderr
        assert '{"child": [1, 1]}' in result.stdout and '{"parent": [2, 2]}' in result.stdout
        delivered = service.delivered()
        assert len(delivered) == 3 and len(set(delivered)) == 3
    finally:
        service.close()


def test_multiprocessing_children_each_deliver_their_own() -> None:
    service = FakeService()
    try:
        result = run_python(
            f"""
            import multiprocessing as mp
            from trace_ingest import TraceIngest
            client = TraceIngest("tik_x", "{service.url}", flush_interval=0.05)
            def work(n):
                for _ in range(n):
                    with client.trace("job"):
                        pass
                return client.flush(10).sent
            if __name__ == "__main__":
                with client.trace("parent"):
                    pass
                with mp.get_context("fork").Pool(3) as pool:
                    print(sum(pool.map(work, [50, 50, 50])))
                print(client.flush(10).sent)
            """
        )
        assert result.returncode == 0, result.stderr
        delivered = service.delivered()
        assert len(delivered) == 151 and len(set(delivered)) == 151
    finally:
        service.close()


def test_a_batch_whose_key_is_still_in_progress_waits_aside_while_the_others_go() -> None:
    first_key: list[str] = []

    def answer(request_traces: list[dict[str, object]]) -> Answer:
        return Answer(200, {}, {"accepted": len(request_traces), "rejected": 0, "errors": []})

    recorder = Recorder(answer=answer)
    original_post = recorder.post

    def post(body: bytes, headers: dict[str, str]) -> Answer:
        if not first_key:
            first_key.append(headers["Idempotency-Key"])
            original_post(body, headers)
            return Answer(409, {"retry-after": "1"}, {"code": "idempotency_in_progress"})
        return original_post(body, headers)

    recorder.post = post  # type: ignore[method-assign]
    client = TraceIngest("tik_x", transport=recorder, max_batch_traces=1, flush_interval=0.01)
    traces(client, 2)
    report = client.flush(10)
    keys = [r["headers"]["idempotency-key"] for r in recorder.requests]
    assert keys[0] == first_key[0] and keys[1] != first_key[0] and keys[2] == first_key[0]
    assert (report.sent, report.pending, report.retried) == (2, 0, {"idempotency_in_progress": 1})


def flushed_twice(answers: list[Answer], count: int) -> tuple[Recorder, list[str], DeliveryReport, DeliveryReport]:
    """`count` traces in serverless mode, a flush stopped by its 1 s deadline, then a flush to the end."""
    recorder = Recorder(answers=answers)
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    ids = traces(client, count)
    first = client.flush(1.0)
    return recorder, ids, first, client.flush()


def test_a_split_batch_stopped_by_the_deadline_resends_only_its_unsent_part() -> None:
    # Whole batch: never fits a window, so split. First half: 200. Second half: 429 past the flush deadline.
    answers = [
        Answer(429, {"retry-after": "60"}, {"code": "batch_exceeds_quota"}),
        Answer(200, {}, {"accepted": 2, "rejected": 0, "errors": []}),
        Answer(429, {"retry-after": "60"}, {"code": "rate_limited"}),
    ]
    recorder, ids, first, second = flushed_twice(answers, 4)
    assert (first.sent, first.pending) == (2, 2)
    assert (second.handed, second.sent, second.pending) == (4, 4, 0)
    last = recorder.requests[-1]
    assert sorted(t["trace_id"] for t in last["body"]["traces"]) == sorted(ids[2:])
    # The unsent half goes again under the key it was refused with, so a copy the service kept lands once.
    assert last["headers"]["idempotency-key"] == recorder.requests[2]["headers"]["idempotency-key"]


def test_a_value_json_cannot_hold_drops_only_its_own_trace(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    traces(client, 2)
    with client.trace("bad") as trace:
        trace.update(input_tokens=float("nan"))
    report = client.flush()
    assert (report.sent, sum(report.rejected.values())) == (2, 0)
    assert sum(report.dropped.values()) == 1 and len(recorder.trace_ids) == 2


def test_a_serverless_flush_that_fails_inside_settles_its_batch_and_returns() -> None:
    def broken(traces: list[dict[str, object]]) -> Answer:
        raise ValueError("Invalid header value")

    client = TraceIngest("tik_x", transport=Recorder(answer=broken), serverless=True)
    traces(client, 3)
    report = client.flush()
    assert (report.sent, report.pending, report.dropped) == (0, 0, {"internal_error": 3})


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_never_posts_on_its_parents_kept_alive_connection() -> None:
    from trace_ingest._transport import HttpTransport

    service = FakeService()
    try:
        transport = HttpTransport(service.url, 5.0)
        parent_connection = transport._connection()
        pid = os.fork()
        if pid == 0:  # the child: a connection of its own, or exit 1
            os._exit(0 if transport._connection() is not parent_connection else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        assert transport._connection() is parent_connection
    finally:
        service.close()


@pytest.mark.parametrize("closed_after_the_check", [False, True])
def test_a_kept_alive_connection_the_server_closed_is_replaced_and_not_counted_as_a_failure(monkeypatch: pytest.MonkeyPatch, closed_after_the_check: bool) -> None:
    """Detected before the send (the idle socket is readable), or, when the close lands after that
    check, retried once at once on a new connection."""
    import select

    from trace_ingest import _transport

    service = FakeService(keep_alive_seconds=1.0)
    try:
        transport = _transport.HttpTransport(service.url, 5.0)
        client = TraceIngest("tik_x", transport=transport, serverless=True)
        traces(client, 2)
        assert client.flush().sent == 2
        deadline = time.monotonic() + 20
        while not select.select([transport._connection().sock], [], [], 0.05)[0]:  # the server closed it
            assert time.monotonic() < deadline
        if closed_after_the_check:
            monkeypatch.setattr(_transport, "_closed_by_peer", lambda sock: False)
        traces(client, 2)
        report = client.flush()
        assert (report.sent, report.retried, len(service.requests)) == (4, {}, 2)
    finally:
        service.close()


def test_a_lone_surrogate_is_sent_as_its_json_escape_and_the_rest_as_utf8_as_typescript_sends_it(recorder: Recorder) -> None:
    import gzip

    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    with client.trace("caf\u00e9 \ud800 \U0001f600"):
        pass
    assert client.flush().sent == 1
    body = gzip.decompress(recorder.requests[0]["raw"])
    # JSON.stringify("café \ud800 😀") === '"café \\ud800 😀"'
    assert '"root_span_name":"café \\ud800 😀"'.encode() in body


def test_the_next_batch_is_compressed_while_the_service_works_on_the_current_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the TypeScript pump does: one process keeps its connection busy (bench: delivery ÷ a bare
    client). The service holds its answer to the first batch until the second has been compressed,
    or 20 s: without the overlap, the second is compressed only after that answer."""
    from trace_ingest._delivery import Deliverer
    from trace_ingest._transport import HttpTransport

    compressed = threading.Event()
    compress = Deliverer.compress
    calls: list[int] = []

    def counting(self: Deliverer, body: bytes) -> bytes:
        calls.append(len(calls) + 1)
        if len(calls) == 2:
            compressed.set()
        return compress(self, body)

    monkeypatch.setattr(Deliverer, "compress", counting)
    overlapped: list[bool] = []

    def answer(batch: list[dict], key: str) -> tuple[int, dict]:
        if not overlapped:
            overlapped.append(compressed.wait(20))
        return 200, {"accepted": len(batch), "rejected": 0, "errors": []}

    service = FakeService(answer)
    try:
        client = TraceIngest("tik_x", transport=HttpTransport(service.url, 30.0), serverless=True)
        traces(client, 1000)
        report = client.flush(60)
        assert (report.sent, report.pending) == (1000, 0)
        assert overlapped == [True]
        assert len(service.requests) == 2
    finally:
        service.close()


def test_a_batch_taken_ahead_goes_back_in_line_when_the_deadline_stops_a_serverless_flush() -> None:
    recorder, ids, first, second = flushed_twice([Answer(503, {"retry-after": "60"}, {"code": "unavailable"})], 1000)
    assert (first.sent, first.pending) == (0, 1000)
    assert (second.sent, second.pending) == (1000, 0)
    delivered = [t["trace_id"] for r in recorder.requests[1:] for t in r["body"]["traces"]]
    assert sorted(delivered) == sorted(ids)


def test_input_and_output_are_taken_by_value_when_set(recorder: Recorder) -> None:
    import json

    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    messages = [{"role": "user", "content": "hi"}]
    answer = {"choices": [{"text": "hello"}]}

    @client.observe(kind="llm")
    def call(history: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
        return answer

    with client.trace("t"):
        with client.span("set in the constructor", input=messages) as span:
            span.output = answer
        updated = client.span("set by update").update(input=messages)
        updated.end()
        call(messages)
        # The trace is still open: it is serialised when it ends, after these.
        messages.append({"role": "assistant", "content": "grown after the spans ended"})
        messages[0]["content"] = "changed"
        answer["choices"].append({"text": "grown"})
    assert client.flush().sent == 1
    spans = recorder.requests[0]["body"]["traces"][0]["spans"]
    original = [{"role": "user", "content": "hi"}]
    assert [json.loads(s["input"]) for s in spans] == [original, original, {"history": original}]
    assert json.loads(spans[0]["output"]) == json.loads(spans[2]["output"]) == {"choices": [{"text": "hello"}]}


def test_a_value_that_holds_itself_still_drops_only_its_own_trace(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    looped: list[object] = []
    looped.append(looped)
    with client.trace("looped"):
        with client.span("s", input=looped):
            pass
    with client.trace("fine"):
        pass
    report = client.flush()
    assert (report.sent, report.dropped) == (1, {"not_serialisable": 1})


def test_a_surrogate_pair_held_as_two_code_points_is_sent_as_its_one_character(recorder: Recorder) -> None:
    import gzip

    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    # What "😀".encode("utf-16-le").decode("utf-16-le", "surrogatepass")-style decoding leaves in a str;
    # JavaScript holds the same two code units as one character.
    pair = "\ud83d\ude00"
    with client.trace(pair):
        with client.span("s", input=pair):
            pass
    assert client.flush().sent == 1
    body = gzip.decompress(recorder.requests[0]["raw"])
    assert '"root_span_name":"😀"'.encode() in body and '"input":"\\"😀\\""'.encode() in body


def test_an_exception_whose_cause_loops_back_never_raises_where_it_is_set(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    first, second = ValueError("a"), ValueError("b")
    first.__cause__, second.__cause__ = second, first
    with client.trace("looped"):
        with client.span("s") as span:
            span.output = first
    report = client.flush()
    assert (report.sent, report.dropped) == (0, {"not_serialisable": 1})
