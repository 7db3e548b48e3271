from __future__ import annotations

import gzip
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from trace_ingest._log import notices
from trace_ingest._policy import Answer

CONFORMANCE = Path(os.environ.get("TRACE_INGEST_CONFORMANCE_DIR", Path(__file__).resolve().parents[2] / "conformance"))


def conformance(name: str) -> Any:
    return json.loads((CONFORMANCE / name).read_text())


class Recorder:
    """A transport that records every request and answers from a script (or with 200 for all)."""

    def __init__(self, answers: list[Answer] | None = None, answer: Callable[[list[dict[str, Any]]], Answer] | None = None) -> None:
        self.answers = list(answers or [])
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def post(self, body: bytes, headers: Mapping[str, str]) -> Answer:
        decoded = json.loads(gzip.decompress(body))
        with self.lock:
            self.requests.append({"headers": {k.lower(): v for k, v in headers.items()}, "body": decoded, "raw": body})
            if self.answers:
                return self.answers.pop(0)
        if self.answer is not None:
            return self.answer(decoded["traces"])
        n = len(decoded["traces"])
        return Answer(200, {}, {"accepted": n, "rejected": 0, "errors": []})

    @property
    def trace_ids(self) -> list[str]:
        return [t["trace_id"] for r in self.requests for t in r["body"]["traces"]]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(autouse=True)
def fresh_notices() -> None:
    """Each test sees the SDK's once-a-minute warnings from a clean slate."""
    notices.reset()


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK honours the proxy variables: a machine's own would send the tests' local traffic to
    its proxy (the child processes inherit this environment too)."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
