"""The shared vectors of sdk/conformance, which the TypeScript SDK runs too."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

import pytest

import trace_ingest
from trace_ingest import TraceIngest
from trace_ingest._delivery import Batch, Deliverer
from trace_ingest._ledger import Ledger
from trace_ingest._policy import Answer, decide, parse_retry_after, rejected_traces

from .conftest import Recorder, conformance

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_defaults_match_the_service_limits() -> None:
    limits = conformance("limits.json")
    assert trace_ingest.MAX_TRACES_PER_BATCH == limits["max_traces_per_batch"]
    assert trace_ingest.MAX_BODY_BYTES == limits["max_body_bytes"]
    client = TraceIngest("tik_x", "http://127.0.0.1:9", serverless=True)
    assert (client.max_batch_traces, client.max_body_bytes) == (limits["max_traces_per_batch"], limits["max_body_bytes"])


def expand(scenarios: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for scenario in scenarios:
        if "each_status" not in scenario:
            out.append((scenario["name"], scenario))
            continue
        for status, code in scenario["each_status"]:
            text = repr(scenario).replace("'<each>'", repr(status), 1).replace("'<each>'", repr(code))
            concrete = eval(text)  # noqa: S307 - our own vector file, substituting its placeholders
            out.append((f"{scenario['name']} [{status}]", concrete))
    return out


DECISIONS = conformance("decisions.json")
assert DECISIONS["cases"] and DECISIONS["rejected_traces"]


@pytest.mark.parametrize("case", DECISIONS["cases"], ids=lambda c: c["name"][:70])
def test_one_answer_one_decision(case: dict[str, Any]) -> None:
    answer = case["answer"]
    made = decide(Answer(answer.get("status"), answer.get("headers", {}), answer.get("body"), answer.get("failure")), case["batch_size"], case["attempt"], case["jitter"])
    expected = case["decision"]
    assert (made.action, made.reason) == (expected["action"], expected["reason"])
    assert made.delay == pytest.approx(expected["delay_seconds"], abs=1e-9)
    if expected["action"] != "delivered":
        assert made.detail == expected["detail"]


@pytest.mark.parametrize("case", DECISIONS["rejected_traces"], ids=lambda c: c["name"][:70])
def test_rejected_traces(case: dict[str, Any]) -> None:
    assert [list(found) for found in rejected_traces(case["body"], case["batch_size"])] == case["found"]


DELIVERY = conformance("delivery.json")


@pytest.mark.parametrize("name,scenario", expand(DELIVERY["scenarios"]), ids=lambda v: v if isinstance(v, str) else "")
def test_delivery_decision(name: str, scenario: dict[str, Any]) -> None:
    answers = [
        Answer(None, failure=a["failure"]) if "failure" in a else Answer(a["status"], {k.lower(): v for k, v in a.get("headers", {}).items()}, a.get("body"))
        for a in scenario["answers"]
    ]
    transport = Recorder(answers)
    waits: list[float] = []
    ledger = Ledger()
    deliverer = Deliverer(transport, "tik_x", ledger, lambda s: waits.append(s) or True, jitter=lambda: DELIVERY["jitter"])
    ids = [str(uuid.uuid4()) for _ in range(scenario["traces"])]
    ledger.hand(len(ids))
    deliverer.deliver(Batch.of([(i, f'{{"trace_id":"{i}"}}'.encode()) for i in ids]))

    sent = [([ids.index(t["trace_id"]) for t in r["body"]["traces"]], r["headers"]["idempotency-key"]) for r in transport.requests]
    assert [s[0] for s in sent] == [r["traces"] for r in scenario["requests"]]
    labels = [r["key"] for r in scenario["requests"]]
    keys = [s[1] for s in sent]
    for i in range(len(keys)):
        for j in range(len(keys)):
            assert (keys[i] == keys[j]) == (labels[i] == labels[j]), f"requests {i} and {j}"
    assert waits == pytest.approx(scenario["waits"])
    report = ledger.report()
    expected = scenario["report"]
    assert (report.sent, report.rejected, report.dropped, report.pending, report.retried) == (
        expected["sent"], expected["rejected"], expected["dropped"], expected["pending"], expected["retried"]
    )
    assert report.accounted


class ScriptError(Exception):
    pass


def run_script(client: TraceIngest, script: list[dict[str, Any]]) -> None:
    def run_spans(owner: Any, spans: list[dict[str, Any]]) -> None:
        for step in spans:
            try:
                with owner.span(**step["span"]) as span:
                    if "set" in step:
                        span.update(**step["set"])
                    run_spans(client, step.get("spans", []))
                    if "raise" in step:
                        raise ScriptError(step["raise"])
            except ScriptError:
                pass

    for step in script:
        fields = dict(step["trace"])
        name = fields.pop("name")
        error = ScriptError(step["raise"]) if "raise" in step else None
        try:
            with client.trace(name, **fields):
                run_spans(client, step.get("spans", []))
                if error is not None:
                    raise error
        except ScriptError as caught:
            assert caught is error


def normalise(body: dict[str, Any]) -> dict[str, Any]:
    names: dict[str, str] = {}

    def placeholder(kind: str, value: str | None) -> str | None:
        if value is None:
            return None
        uuid.UUID(value)
        if value not in names:
            names[value] = f"<{kind}-{sum(1 for v in names.values() if v.startswith('<' + kind)) + 1}>"
        return names[value]

    for trace in body["traces"]:
        trace["trace_id"] = placeholder("trace", trace["trace_id"])
        for item in [trace, *trace["spans"]]:
            assert TIMESTAMP.match(item["timestamp"]), item["timestamp"]
            assert isinstance(item["duration_ms"], (int, float)) and item["duration_ms"] >= 0
            item["timestamp"], item["duration_ms"] = "<timestamp>", "<duration>"
        for span in trace["spans"]:
            span["span_id"] = placeholder("span", span["span_id"])
            span["parent_span_id"] = placeholder("span", span["parent_span_id"])
    return body


REQUESTS = conformance("requests.json")


@pytest.mark.parametrize("scenario", REQUESTS["scenarios"], ids=lambda s: s["name"][:60])
def test_request_on_the_wire(scenario: dict[str, Any]) -> None:
    transport = Recorder()
    options = dict(scenario["client"])
    mask_spec = options.pop("mask", None)
    mask = (lambda field, value: mask_spec.get(field, value)) if mask_spec else None
    client = TraceIngest(options.pop("api_key"), transport=transport, serverless=True, mask=mask, **options)
    run_script(client, scenario["script"])
    report = client.flush()
    assert len(transport.requests) == 1
    request = transport.requests[0]
    for name, value in REQUESTS["headers"].items():
        actual = request["headers"][name]
        if value == "<uuid>":
            uuid.UUID(actual)
        elif value == "<trace-ingest-sdk>":
            assert actual.startswith("trace-ingest-python/")
        else:
            assert actual == value, name
    assert normalise(request["body"]) == scenario["body"]
    assert report.sent == len(scenario["body"]["traces"]) and report.pending == 0


RETRY_AFTER = [(vectors["now"], case) for vectors in (conformance("retry-after.json"), conformance("http-dates.json")) for case in vectors["cases"]]


@pytest.mark.parametrize("now,case", RETRY_AFTER, ids=lambda c: repr(c["header"]) if isinstance(c, dict) else "")
def test_retry_after_header(now: str, case: dict[str, Any]) -> None:
    at = datetime.fromisoformat(now.replace("Z", "+00:00")).timestamp()
    assert parse_retry_after(case["header"], at) == case["seconds"]


ENCODING = conformance("encoding-values.json")
assert ENCODING["cases"]


def python_value(value: Any) -> Any:
    """A vector's value as the Python object it stands for (see the file's description)."""
    if isinstance(value, list):
        return [python_value(item) for item in value]
    if isinstance(value, dict):
        if "$map" in value:
            return {python_value(key): python_value(item) for key, item in value["$map"]}
        if "$set" in value:
            return set(python_value(value["$set"]))
        if "$number" in value:
            return float(value["$number"].lower().replace("infinity", "inf"))
        if "$error" in value:
            spec = value["$error"]
            error = type(spec["name"], (Exception,), {})(spec["message"])
            error._conformance_stack = spec["stack"]  # type: ignore[attr-defined]
            if "cause" in spec:
                error.__cause__ = python_value(spec["cause"])
            return error
        return {key: python_value(item) for key, item in value.items()}
    return value


# Attributes take an object: only the vectors whose value is one run there.
FIELD_CASES = [
    pytest.param(field, case, id=f"{field}: {case['name'][:60]}")
    for case in ENCODING["cases"]
    for field in ("input", "output", "attributes")
    if field != "attributes" or (isinstance(case["value"], dict) and not ({"$set", "$error", "$number"} & case["value"].keys()))
]


@pytest.mark.parametrize("field,case", FIELD_CASES)
def test_a_value_is_written_as_both_sdks_write_it(case: dict[str, Any], field: str, recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip
    import json

    from trace_ingest import _wire

    # The vector's stack stands in for the traceback Python would write (the file's description).
    monkeypatch.setattr(_wire, "stack_of", lambda error: error._conformance_stack)
    value = python_value(case["value"])
    client = TraceIngest("tik_x", transport=recorder, serverless=True)
    with client.trace("t"):
        with client.span("s", **{field: value}):
            pass
    assert client.flush().sent == 1
    body = gzip.decompress(recorder.requests[0]["raw"])
    assert json.loads(body)["traces"][0]["spans"][0][field] == case["json"]
    # The body's bytes too: the text is one JSON string of the body, escaped once more.
    assert json.dumps(case["json"], ensure_ascii=False, separators=(",", ":")).encode() in body
