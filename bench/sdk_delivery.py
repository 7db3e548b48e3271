"""Run by bench/sdk-python.ts (group `sdk-python`) with the ingest URL and a key of a running
`npm start` stack: one process's delivery throughput with the Python SDK against a bare keep-alive
http.client loop posting the SDK's own gzip batches (each with a new Idempotency-Key, as the SDK
sends one), alternating rounds in the same run. Prints the rows as a JSON list on its last line."""

from __future__ import annotations

import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Mapping

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sdk_caller_cost import SPANS, workload  # noqa: E402

from trace_ingest import TraceIngest  # noqa: E402
from trace_ingest._policy import Answer  # noqa: E402
from trace_ingest._transport import HttpTransport  # noqa: E402

TRACES = 5_000
ROUNDS = 5


class Keeping:
    """The SDK's own transport, keeping each gzip body it sent for the bare client to send again."""

    def __init__(self, inner: HttpTransport) -> None:
        self.inner = inner
        self.bodies: list[bytes] = []

    def post(self, body: bytes, headers: Mapping[str, str]) -> Answer:
        self.bodies.append(body)
        return self.inner.post(body, headers)


def sdk_round(url: str, api_key: str) -> tuple[float, list[bytes]]:
    transport = Keeping(HttpTransport(url.removesuffix("/v1/traces/ingest"), 30.0))
    client = TraceIngest(api_key, transport=transport, serverless=True, max_queue_traces=TRACES)
    for n in range(TRACES):
        workload(client, n)
    started = time.perf_counter()
    report = client.flush()
    seconds = time.perf_counter() - started
    client.shutdown(0)
    if report.sent != TRACES:
        raise RuntimeError(f"the SDK delivered {report}")
    return TRACES / seconds, transport.bodies


def bare_round(url: str, api_key: str, bodies: list[bytes]) -> float:
    parsed = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    started = time.perf_counter()
    for body in bodies:
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", "X-API-Key": api_key, "Idempotency-Key": str(uuid.uuid4())}
        connection.request("POST", parsed.path, body=body, headers=headers)
        response = connection.getresponse()
        answer = json.loads(response.read())
        if response.status != 200 or "accepted" not in answer:
            raise RuntimeError(f"bare client: {response.status} {answer}")
    seconds = time.perf_counter() - started
    connection.close()
    return TRACES / seconds


def main() -> None:
    url, api_key, description = sys.argv[1], sys.argv[2], sys.argv[3]
    load = os.getloadavg()[0]
    sdk_rates, bare_rates = [], []
    for _ in range(ROUNDS):
        rate, bodies = sdk_round(url, api_key)
        sdk_rates.append(rate)
        bare_rates.append(bare_round(url, api_key, bodies))
    sdk, bare = statistics.median(sdk_rates), statistics.median(bare_rates)
    ratios = ", ".join(f"{s / b:.2f}" for s, b in zip(sdk_rates, bare_rates))
    print(
        json.dumps(
            [
                {
                    "group": "sdk-python",
                    "metric": f"Python: one process's delivery throughput to the local stack ({TRACES} traces of {SPANS} spans), SDK ÷ bare keep-alive client",
                    "value": round(sdk, 1),
                    "unit": "traces/s",
                    "baseline": round(bare, 1),
                    "ratio": round(sdk / bare, 2),
                    "target": ">= 0.9",
                    "note": (
                        f"from flush() to the last answer (serverless flush: batching, gzip, Idempotency-Key, answers read and accounted), traces queued "
                        f"beforehand. Baseline: a bare http.client keep-alive loop posting the same gzip bodies one after another, each with a new "
                        f"Idempotency-Key; median of {ROUNDS} alternating rounds (per-round ratios {ratios}). {description}; {os.cpu_count()} CPUs, "
                        f"load average {load:.1f} when it started"
                    ),
                }
            ]
        )
    )


if __name__ == "__main__":
    main()
