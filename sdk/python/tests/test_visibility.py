"""Failures you can see (docs/sdk.md, "Logging"): the first connection failure names the URL, each
final rejection and drop is logged once per cause per minute, `debug=True` logs every request, and
in AWS Lambda an unwrapped background client says what to do."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trace_ingest import TraceIngest
from trace_ingest._log import Notices
from trace_ingest._policy import Answer

from .conftest import Recorder
from .fake_service import FakeService
from .test_client import SRC, traces

ROOT = Path(__file__).resolve().parents[3]


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "trace_ingest" and r.levelno == logging.WARNING]


def test_a_cause_is_said_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    notices = Notices(clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        notices.warn("a", "first a")
        notices.warn("a", "second a")
        notices.warn("b", "first b")
        now[0] = 59.9
        notices.warn("a", "third a")
        now[0] = 60.0
        notices.warn("a", "fourth a")
    assert warnings_of(caplog) == ["first a", "first b", "fourth a"]


def test_an_unreachable_address_is_logged_once_naming_the_url(caplog: pytest.LogCaptureFixture) -> None:
    client = TraceIngest("tik_x", "http://127.0.0.1:9", serverless=True)
    traces(client, 2)
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        report = client.flush(1.5)
        client.flush(0.5)
        client.shutdown(0)
    assert report.pending == 2
    found = [m for m in warnings_of(caplog) if "cannot reach" in m and "not delivered" not in m]
    assert len(found) == 1 and "http://127.0.0.1:9/v1/traces/ingest" in found[0]
    # The last word is what became of them, not that they will be retried.
    assert warnings_of(caplog)[-1].startswith(
        "trace_ingest at shutdown: 2 trace(s) of 2 not delivered to http://127.0.0.1:9/v1/traces/ingest: 2 unsent, lost (set spool_dir to keep them "
        "for the next start) (the last attempt: could not reach http://127.0.0.1:9/v1/traces/ingest (reset: ConnectionRefusedError("
    )


def test_a_final_rejection_is_logged_with_its_code_and_count(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder(answer=lambda t: Answer(401, {}, {"code": "invalid_api_key", "detail": "unknown key"}))
    client = TraceIngest("tik_x", transport=recorder, serverless=True, max_batch_traces=3)
    traces(client, 5)
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        assert client.flush().rejected == {"invalid_api_key": 5}
    assert warnings_of(caplog) == [
        "trace_ingest: the service rejected 3 trace(s): invalid_api_key (unknown key) (the report counts every rejection; this reason is logged at most once a minute)"
    ]


def test_drops_are_logged(caplog: pytest.LogCaptureFixture, recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True, max_queue_traces=1)
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        traces(client, 3)
    assert [m for m in warnings_of(caplog) if "dropped" in m and "queue_full" in m] != []


def test_debug_logs_every_request_and_answer(caplog: pytest.LogCaptureFixture, recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True, max_batch_traces=2, debug=True)
    traces(client, 5)
    with caplog.at_level(logging.DEBUG, logger="trace_ingest"):
        client.flush()
    posts = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and r.getMessage().startswith("POST ")]
    assert len(posts) == len(recorder.requests) == 3 and all("-> 200" in p for p in posts)


def test_in_lambda_an_unwrapped_background_client_warns_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, recorder: Recorder) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agent")
    with caplog.at_level(logging.WARNING, logger="trace_ingest"):
        background = TraceIngest("tik_x", transport=recorder)
        traces(background, 3)
        serverless = TraceIngest("tik_x", transport=recorder, serverless=True)
        traces(serverless, 1)
        wrapped = TraceIngest("tik_x", transport=recorder)
        wrapped.wrap_handler(lambda event, context: None)
        traces(wrapped, 1)
    found = [m for m in warnings_of(caplog) if "AWS Lambda" in m]
    assert len(found) == 1 and "wrap_handler" in found[0] and "serverless=True" in found[0]
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    caplog.clear()
    traces(TraceIngest("tik_x", transport=recorder), 1)
    assert [m for m in warnings_of(caplog) if "AWS Lambda" in m] == []


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 3_000


def test_a_wrapped_handler_flushes_before_it_returns_and_when_it_raises(recorder: Recorder) -> None:
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    error = KeyError("boom")

    @client.wrap_handler
    def handler(event: dict[str, Any], context: Any) -> str:
        with client.trace("invocation"):
            pass
        if event.get("fail"):
            raise error
        return "ok"

    assert handler({}, Context()) == "ok"
    assert len(recorder.trace_ids) == 1
    with pytest.raises(KeyError) as caught:
        handler({"fail": True}, Context())
    assert caught.value is error and len(recorder.trace_ids) == 2
    assert handler.__name__ == "handler"


def test_an_async_handler_is_wrapped_too_and_the_flush_respects_the_remaining_time(recorder: Recorder) -> None:
    seen: list[float | None] = []
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    original = client.flush
    client.flush = lambda timeout=None: (seen.append(timeout), original(timeout))[1]  # type: ignore[method-assign]

    @client.wrap_handler(flush_timeout=30)
    async def handler(event: Any, context: Any) -> int:
        with client.trace("invocation"):
            pass
        return 7

    assert asyncio.run(handler({}, Context())) == 7
    assert seen == [2.5] and len(recorder.trace_ids) == 1


def python_block_after(markdown: str, heading: str) -> str:
    section = markdown.split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize("doc,heading", [("README.md", "## Send from Python"), ("sdk/python/README.md", "## Quickstart")])
def test_the_documented_programs_exit_non_zero_when_nothing_was_sent(doc: str, heading: str, tmp_path: Path) -> None:
    program = tmp_path / "example.py"
    program.write_text(python_block_after((ROOT / doc).read_text(), heading))
    refusing = FakeService(lambda t, key: (401, {"code": "invalid_api_key"}))
    accepting = FakeService()
    try:
        for service, ok in ((refusing, False), (accepting, True)):
            env = {**os.environ, "PYTHONPATH": SRC, "TRACE_INGEST_API_KEY": "tik_x", "TRACE_INGEST_BASE_URL": service.url}
            result = subprocess.run([sys.executable, str(program)], env=env, capture_output=True, text=True, timeout=60)
            assert (result.returncode == 0) == ok, result.stdout + result.stderr
    finally:
        refusing.close()
        accepting.close()
