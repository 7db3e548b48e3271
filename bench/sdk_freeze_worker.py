"""The Python worker of bench/sdk-freeze-harness.ts (its header gives the protocol): one simulated
Lambda execution environment. For each line on stdin, a handler hands over 10 traces of one span
through client.wrap_handler (serverless, spool_sync "write"); then one JSON line: the trace ids,
what was still pending after the wrapper's flush, how long that flush took, and each spool write.

Started as ``python3 bench/sdk_freeze_worker.py <API base URL> <API key> <spool directory>``."""

from __future__ import annotations

import json
import sys
import time

from trace_ingest import TraceIngest


def main() -> None:
    base_url, api_key, spool_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    client = TraceIngest(api_key, base_url, serverless=True, spool_dir=spool_dir, spool_sync="write")
    flush_started = 0.0

    @client.wrap_handler
    def handler(event: str, context: object = None) -> list[str]:
        nonlocal flush_started
        ids = []
        for n in range(10):
            with client.trace("invocation", conversation_id=event) as trace:
                with client.span("step", kind="llm", model="gpt-4o", input={"n": n}, input_tokens=10) as span:
                    span.output = {"text": "ok"}
            ids.append(trace.trace_id)
        flush_started = time.perf_counter()  # the wrapper's flush starts when this returns
        return ids

    spool = client._spool  # the bench times the spool's own writes
    for line in sys.stdin:
        if spool is not None:
            spool.write_seconds.clear()
        ids = handler(line.strip())
        flush_ms = (time.perf_counter() - flush_started) * 1000
        spool_ms = [s * 1000 for s in spool.write_seconds] if spool is not None else []
        print(json.dumps({"ids": ids, "pending": client.report().pending, "flush_ms": flush_ms, "spool_ms": spool_ms}), flush=True)


if __name__ == "__main__":
    main()
