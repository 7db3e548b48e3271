"""Run by bench/sdk.ts: the Python SDK's caller cost per span against a no-op with the same shape.
Prints {"sdk_us": …, "noop_us": …} (µs per span, median of rounds)."""

import json
import statistics
import time
from contextlib import contextmanager

from trace_ingest import TraceIngest
from trace_ingest._policy import Answer

SPANS, TRACES, ROUNDS = 8, 500, 7


class Sink:
    def post(self, body, headers):
        return Answer(200, {}, {"accepted": 0, "rejected": 0, "errors": []})


class Noop:
    """The same calls with nothing behind them: the cost a caller pays for the `with` blocks alone."""

    class Item:
        output = None
        input_tokens = 0
        output_tokens = 0

    @contextmanager
    def trace(self, name, **fields):
        yield self

    @contextmanager
    def span(self, name, **fields):
        yield Noop.Item()


def workload(client, n):
    with client.trace("support-agent", conversation_id=f"conv-{n % 100}", user_id="user-1", tags=["bench"]):
        for s in range(SPANS):
            with client.span(f"step-{s}", kind="tool" if s % 2 else "llm", model="gpt-4o", input={"question": "Where is my refund?", "step": s}) as span:
                span.output = {"text": "Refunds take five working days.", "step": s}
                span.input_tokens = 120
                span.output_tokens = 30


def per_span(client, flush, rounds=ROUNDS):
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for n in range(TRACES):
            workload(client, n)
        samples.append((time.perf_counter() - started) / (TRACES * SPANS) * 1e6)
        flush()
    return statistics.median(samples)


if __name__ == "__main__":
    sdk = TraceIngest("tik_bench", transport=Sink(), serverless=True, max_queue_traces=TRACES * 2)
    print(json.dumps({"sdk_us": per_span(sdk, sdk.flush), "noop_us": per_span(Noop(), lambda: None)}))
