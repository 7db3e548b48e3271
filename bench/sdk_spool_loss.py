"""Run by bench/sdk-python.ts (group `sdk-python`): the Python SDK's spool at its worst moments,
against a local stand-in for the service (bench/sdk_fake_ingest.py, which keeps the service's
idempotency). The freeze harness runs against `npm start` instead (bench/sdk-freeze-harness.ts with
bench/sdk_freeze_worker.py).

- spool loss: a process handing traces over without pause is killed with SIGKILL at 20 random
  moments per setting; a new client on its spool sends what was left; counted: traces handed over
  before the kill and never stored, against those handed over in the last interval before it. The
  stand-in stays here: it answers in 0-20 ms at random and tells after each kill, at once and
  exactly, which traces it holds, where `npm start` would need the landing and a compaction per kill.
- caller cost with the spool on ÷ off (no service at all: a sink).

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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sdk_caller_cost import ROUNDS, SPANS, TRACES, Sink, per_span  # noqa: E402
from sdk_fake_ingest import FakeIngest  # noqa: E402

from trace_ingest import TraceIngest  # noqa: E402

KILLS = int(os.environ.get("SDK_SPOOL_KILLS", "20"))
SPOOL_INTERVAL = 0.1
GROUP = "sdk-python"
rng = random.Random()


# The child of the SDK's own kill -9 tests, run here without its pauses.
HANDING = Path(__file__).resolve().parents[1] / "sdk" / "python" / "tests" / "handing_child.py"

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
                child = subprocess.Popen([sys.executable, str(HANDING), service.url, str(spool), sync, str(log)])
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
    interval = spool_loss("interval")
    write = spool_loss("write")
    cost = caller_cost()
    machine = f"{os.cpu_count()} CPUs, load average {load:.1f} when it started"

    rows = [
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
