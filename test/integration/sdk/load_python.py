"""Load for the Python SDK against the local stack: one client made before forking, used by two
forked processes (fork safety), each sending from four threads; the spool on. Writes, per process,
the trace ids it handed over and its final report to <out>.<n>.json.

usage: load_python.py <traces> <out prefix> <spool dir>   (key and address from the environment)
"""

import dataclasses
import json
import multiprocessing
import sys
import threading
import time

from trace_ingest import TraceIngest

PROCESSES, THREADS = 2, 4
total, out, spool = int(sys.argv[1]), sys.argv[2], sys.argv[3]
client = TraceIngest(spool_dir=spool, max_retry_seconds=900, max_queue_traces=50_000)


def report_progress(label: str) -> None:
    """A line a second with this process's accounting, so the test can see the 429s come."""

    def loop() -> None:
        while True:
            print(f"progress python-{label} {json.dumps(dataclasses.asdict(client.report()))}", flush=True)
            time.sleep(1)

    threading.Thread(target=loop, daemon=True).start()


def send(label: str, count: int) -> list[str]:
    ids: list[str] = []
    lock = threading.Lock()

    def thread(n: int) -> None:
        for i in range(n):
            with client.trace("sdk-load", conversation_id=label, tags=["python"]) as trace:
                with client.span("step", kind="tool", input={"i": i}):
                    pass
            with lock:
                ids.append(trace.trace_id)

    shares = [count // THREADS + (1 if n < count % THREADS else 0) for n in range(THREADS)]
    threads = [threading.Thread(target=thread, args=(share,)) for share in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ids


def child(index: int) -> None:
    report_progress(f"child-{index}")
    share = (total - 100) // PROCESSES + (1 if index < (total - 100) % PROCESSES else 0)
    ids = send(f"child-{index}", share)
    report = client.shutdown(900)
    with open(f"{out}.{index}.json", "w") as handle:
        json.dump({"ids": ids, "report": dataclasses.asdict(report)}, handle)


if __name__ == "__main__":
    report_progress("parent")
    before = send("parent", 100)  # queued in the parent before the fork: sent by the parent only
    processes = [multiprocessing.get_context("fork").Process(target=child, args=(i,)) for i in range(PROCESSES)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
    report = client.shutdown(900)
    with open(f"{out}.parent.json", "w") as handle:
        json.dump({"ids": before, "report": dataclasses.asdict(report)}, handle)
    sys.exit(max(p.exitcode or 0 for p in processes))
