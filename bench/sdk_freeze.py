"""Run by bench/sdk-python.ts (group `sdk-python`): the Python SDK at its worst moments, against a
local stand-in for the service (bench/sdk_fake_ingest.py, which keeps the service's idempotency).

- freeze: >= 1,000 simulated Lambda invocations (handler, 10 traces, flush), each followed by
  SIGSTOP for 0-50 ms then SIGCONT, or (1 in 20) SIGKILL and a new process on the same spool;
  counted: traces lost among flushes that returned with nothing pending, traces stored twice; the
  p99 of flush() and, with spool_sync="write", of the spool write alone.
- spool loss: a process handing traces over without pause is killed with SIGKILL at 20 random
  moments per setting; a new client on its spool sends what was left; counted: traces handed over
  before the kill and never stored, against those handed over in the last interval before it.
- caller cost with the spool on ÷ off.

Prints the rows (bench/types.ts BenchResult) as a JSON list on its last line."""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sdk_caller_cost import ROUNDS, SPANS, TRACES, Sink, per_span  # noqa: E402
from sdk_fake_ingest import FakeIngest  # noqa: E402

from trace_ingest import TraceIngest  # noqa: E402

INVOCATIONS = int(os.environ.get("SDK_FREEZE_INVOCATIONS", "1000"))
KILLS = int(os.environ.get("SDK_SPOOL_KILLS", "20"))
SPOOL_INTERVAL = 0.1
GROUP = "sdk-python"
rng = random.Random()


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


INVOKED = """
    import json, sys, time
    from trace_ingest import TraceIngest

    url, spool, sync = sys.argv[1], sys.argv[2], sys.argv[3]
    client = TraceIngest("tik_bench", url, serverless=True, **({"spool_dir": spool, "spool_sync": sync} if spool else {}))

    def handler(event):
        ids = []
        for n in range(10):
            with client.trace("invocation", conversation_id=event) as trace:
                with client.span("step", kind="llm", model="gpt-4o", input={"n": n}, input_tokens=10) as span:
                    span.output = {"text": "ok"}
            ids.append(trace.trace_id)
        return ids

    for line in sys.stdin:
        if client._spool is not None:
            client._spool.write_seconds.clear()
        ids = handler(line.strip())
        started = time.perf_counter()
        report = client.flush(5)
        flush_ms = (time.perf_counter() - started) * 1000
        spool_ms = [s * 1000 for s in client._spool.write_seconds] if client._spool is not None else []
        print(json.dumps({"ids": ids, "pending": report.pending, "flush_ms": flush_ms, "spool_ms": spool_ms}), flush=True)
"""


def freeze(spool_sync: str | None) -> dict[str, Any]:
    service = FakeIngest()
    spool = tempfile.mkdtemp(prefix="sdk-freeze-") if spool_sync else ""

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(INVOKED), service.url, spool, spool_sync or ""],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    child = start()
    flush_ms: list[float] = []
    spool_ms: list[float] = []
    settled: list[str] = []
    unsettled = kills = stops = 0
    try:
        for n in range(INVOCATIONS):
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(f"conv-{n}\n")
            child.stdin.flush()
            result = json.loads(child.stdout.readline())
            flush_ms.append(result["flush_ms"])
            spool_ms += result["spool_ms"]
            if result["pending"] == 0:
                settled += result["ids"]
            else:
                unsettled += 1
            if rng.random() < 0.05:
                child.kill()
                child.wait()
                kills += 1
                child = start()
            else:
                os.kill(child.pid, signal.SIGSTOP)
                time.sleep(rng.uniform(0, 0.05))
                os.kill(child.pid, signal.SIGCONT)
                stops += 1
        lost, twice = service.lost_and_twice(settled)
    finally:
        child.kill()
        child.wait()
        service.close()
    return {"lost": lost, "twice": twice, "settled": len(settled), "unsettled": unsettled, "kills": kills, "stops": stops, "flush_p99": p99(flush_ms), "spool_p99": p99(spool_ms), "spool_writes": len(spool_ms)}


HANDING = """
    import os, sys, time
    from trace_ingest import TraceIngest
    # A queue that never fills: a trace dropped as queue_full is reported, not lost by the spool.
    client = TraceIngest("tik_bench", sys.argv[1], spool_dir=sys.argv[2], spool_sync=sys.argv[3], flush_interval=0.02, max_batch_traces=25,
                         max_queue_traces=10_000_000, max_queue_bytes=1 << 40)
    log = os.open(sys.argv[4], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    n = 0
    while True:
        with client.trace("t", attributes={"n": n}) as trace:
            with client.span("s", input={"q": "x" * (n % 300)}):
                pass
        os.write(log, f"{trace.trace_id} {time.monotonic()}\\n".encode())
        n += 1
"""

RECOVER = """
    import sys
    from trace_ingest import TraceIngest
    report = TraceIngest("tik_bench", sys.argv[1], spool_dir=sys.argv[2]).flush(60)
    print(report.pending)
"""


def spool_loss(sync: str) -> dict[str, float]:
    service = FakeIngest(max_delay=0.02)
    totals: dict[str, float] = {"lost": 0, "in_interval": 0, "handed": 0, "twice": 0, "over_bound": 0, "over_process_bound": 0, "oldest_lost_ms": 0.0, "oldest_lost_before_last_ms": 0.0}
    try:
        with tempfile.TemporaryDirectory(prefix="sdk-spool-loss-") as work:
            for kill in range(KILLS):
                spool, log = Path(work) / f"spool-{kill}", Path(work) / f"log-{kill}"
                child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HANDING), service.url, str(spool), sync, str(log)])
                deadline = time.monotonic() + 60
                while (not log.exists() or log.read_text().count("\n") < 5) and time.monotonic() < deadline:
                    time.sleep(0.005)
                time.sleep(rng.uniform(0, 0.5))
                killed_at = time.monotonic()
                child.send_signal(signal.SIGKILL)
                child.wait()
                recovered = subprocess.run([sys.executable, "-c", textwrap.dedent(RECOVER), service.url, str(spool)], capture_output=True, text=True, timeout=120)
                if recovered.stdout.strip() != "0":
                    raise RuntimeError(f"recovery left traces pending: {recovered.stdout} {recovered.stderr}")
                handed = [(line.split()[0], float(line.split()[1])) for line in log.read_text().splitlines() if len(line.split()) == 2]
                with service.lock:
                    lost_at = [at for trace_id, at in handed if trace_id not in service.stored]
                last = max((at for _, at in handed), default=killed_at)
                in_interval = sum(1 for _, at in handed if at > killed_at - SPOOL_INTERVAL)
                # The interval runs on the process's time: a process the machine did not run just
                # before the kill could not write either. Also counted against its last hand-over.
                in_process_interval = sum(1 for _, at in handed if at > last - SPOOL_INTERVAL)
                totals["lost"] += len(lost_at)
                totals["in_interval"] += in_interval
                totals["handed"] += len(handed)
                totals["over_bound"] += int(len(lost_at) > in_interval)
                totals["over_process_bound"] += int(len(lost_at) > in_process_interval)
                if lost_at:
                    totals["oldest_lost_ms"] = max(totals["oldest_lost_ms"], (killed_at - min(lost_at)) * 1000)
                    totals["oldest_lost_before_last_ms"] = max(totals["oldest_lost_before_last_ms"], (last - min(lost_at)) * 1000)
            totals["twice"] = service.lost_and_twice([])[1]
    finally:
        service.close()
    return totals


def caller_cost() -> dict[str, float]:
    """µs per span, each setting's median over rounds that alternate the settings (rotating their
    order), so that a change in the machine's load falls on all of them alike."""
    samples: dict[str, list[float]] = {"off": [], "interval": [], "write": []}
    with tempfile.TemporaryDirectory(prefix="sdk-caller-spool-") as work:
        clients = {
            name: TraceIngest("tik_bench", transport=Sink(), serverless=True, max_queue_traces=TRACES * 2, **options)  # type: ignore[arg-type]
            for name, options in (("off", {}), ("interval", {"spool_dir": f"{work}/i"}), ("write", {"spool_dir": f"{work}/w", "spool_sync": "write"}))
        }
        names = list(clients)
        for round_ in range(ROUNDS):
            # Each setting in each place of the order in turn, and no garbage of one setting's
            # round left for the next one's to collect.
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                gc.collect()
                samples[name].append(per_span(clients[name], clients[name].flush, rounds=1))
        for client in clients.values():
            client.shutdown(0)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    load = os.getloadavg()[0]
    plain = freeze(None)
    spooled = freeze("write")
    interval = spool_loss("interval")
    write = spool_loss("write")
    cost = caller_cost()
    machine = f"{os.cpu_count()} CPUs, load average {load:.1f} when it started"

    def freeze_note(run: dict[str, Any], what: str) -> str:
        return (
            f"{INVOCATIONS} invocations ({what}): handler with 10 traces of 1 span, flush(5) in serverless mode, then SIGSTOP 0-50 ms + SIGCONT "
            f"({run['stops']}) or SIGKILL and a new process on the same state ({run['kills']}); {run['settled']} traces in flushes that returned with "
            f"nothing pending, {run['unsettled']} flushes returned with something pending; against bench/sdk_fake_ingest.py (the service's "
            f"idempotency: stored twice = one trace under two keys). {machine}"
        )

    rows = [
        {"group": GROUP, "metric": "Python: freeze harness, traces lost among flushes that returned with nothing pending", "value": plain["lost"] + spooled["lost"], "unit": "traces", "target": "0",
         "note": freeze_note(plain, "spool off") + f" | and again with spool_sync=write: {freeze_note(spooled, 'spool on')}"},
        {"group": GROUP, "metric": "Python: freeze harness, traces stored twice (lost: see the row above)", "value": plain["twice"] + spooled["twice"], "unit": "traces", "target": "0",
         "note": f"both freeze runs ({2 * INVOCATIONS} invocations)"},
        {"group": GROUP, "metric": "Python: freeze harness, p99 of flush() per invocation (10 traces, one round trip)", "value": round(plain["flush_p99"], 2), "unit": "ms",
         "note": f"spool off; with spool_sync=write: {spooled['flush_p99']:.2f} ms. No target (a network round trip). {machine}"},
        {"group": GROUP, "metric": "Python: freeze harness (lost: see above), p99 of the spool write alone with spool_sync=write", "value": round(spooled["spool_p99"], 3), "unit": "ms", "target": "<= 15 ms",
         "note": f"{spooled['spool_writes']} writes: one per trace handed over (write(2) of its record), one per batch before its request, one per done record"},
        {"group": GROUP, "metric": f"Python: spool, traces lost after kill -9 at {KILLS} random moments (spool_sync=interval, {int(SPOOL_INTERVAL * 1000)} ms)", "value": interval["lost"], "unit": "traces",
         "baseline": interval["in_interval"], "ratio": round(interval["lost"] / interval["in_interval"], 3) if interval["in_interval"] else 0, "target": "<= 1 (lost <= handed over in the interval)",
         "note": f"baseline: traces handed over in the {int(SPOOL_INTERVAL * 1000)} ms before each kill; {interval['handed']} handed over in all; kills whose loss exceeded that bound: {interval['over_bound']} of {KILLS} "
                 f"(the oldest lost trace was handed over {interval['oldest_lost_ms']:.0f} ms before the kill); counted against the {int(SPOOL_INTERVAL * 1000)} ms before the process's last hand-over "
                 f"(its own time: a process the machine does not run cannot write), {interval['over_process_bound']} (oldest lost {interval['oldest_lost_before_last_ms']:.0f} ms before it); stored twice: {interval['twice']}. A process hands traces over without pause to a service answering in 0-20 ms, SIGKILL 0-0.5 s after its 5th trace, then a new client on the spool flushes. {machine}"},
        {"group": GROUP, "metric": f"Python: spool, traces lost after kill -9 at {KILLS} random moments (spool_sync=write)", "value": write["lost"], "unit": "traces", "target": "0",
         "note": f"{write['handed']} handed over in all; stored twice: {write['twice']}; as the row above. {machine}"},
        {"group": GROUP, "metric": "Python: caller cost per span with the spool on (spool_sync=interval) ÷ off", "value": round(cost["interval"], 2), "unit": "µs", "baseline": round(cost["off"], 2),
         "ratio": round(cost["interval"] / cost["off"], 2), "target": "<= 2",
         "note": f"bench/sdk_caller_cost.py's workload ({SPANS}-span traces), median of {ROUNDS} rounds of {TRACES} traces per setting, the settings alternating round by round; spool_sync=write: {cost['write']:.2f} µs ({cost['write'] / cost['off']:.2f}×). {machine}"},
    ]
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
