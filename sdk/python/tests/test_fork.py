"""Fork safety whatever the moment (docs/sdk.md, "Threads and forks"): children forked while the
parent's worker connects and sends never hang, and deliver their own traces once."""

from __future__ import annotations

import json
import os
import sys

import pytest

from .fake_service import FakeService
from .test_client import run_python

FORKS = """
    import json, os, random, sys, threading, time
    from trace_ingest import TraceIngest

    url, first, forks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random()
    client = TraceIngest("tik_x", url, flush_interval=0.001, max_batch_traces=3)
    stop = threading.Event()

    def produce():
        while not stop.is_set():
            with client.trace("parent"):
                pass
            time.sleep(rng.uniform(0, 0.002))

    children = {}
    threading.Thread(target=produce, daemon=True).start()
    for n in range(first, first + forks):
        # The first forks land around the worker's first connect (which imports the idna codec unless
        # the constructor did), the later ones in its sends and reconnects.
        time.sleep(rng.uniform(0, 0.004 * (n - first + 1)))
        pid = os.fork()
        if pid == 0:
            ids = []
            for _ in range(3):
                with client.trace(f"child-{n}") as trace:
                    pass
                ids.append(trace.trace_id)
            report = client.flush(5)
            os.write(1, (json.dumps({"n": n, "ids": ids, "sent": report.sent, "pending": report.pending, "handed": report.handed}) + "\\n").encode())
            os._exit(0)
        children[pid] = n
    stop.set()
    hung = []
    deadline = time.monotonic() + 60
    while children and time.monotonic() < deadline:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            children.pop(pid)
        else:
            time.sleep(0.01)
    for pid, n in children.items():
        hung.append(n)
        os.kill(pid, 9)
    print(json.dumps({"hung": hung}), flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_children_forked_at_random_moments_during_connect_and_send_each_deliver_their_own_traces_once() -> None:
    """50 children: 10 fresh parent processes (a first connect each) fork 5 children each."""
    service = FakeService(close_connections=True)  # every request connects: forks land in connects too
    try:
        lines = []
        for parent in range(10):
            result = run_python(FORKS, timeout=120, args=[service.url, str(parent * 5), "5"])
            assert result.returncode == 0, result.stderr
            lines += [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        reports = [line for line in lines if "n" in line]
        assert [line["hung"] for line in lines if "hung" in line] == [[]] * 10
        assert sorted(r["n"] for r in reports) == list(range(50))
        assert [r for r in reports if (r["handed"], r["sent"], r["pending"]) != (3, 3, 0)] == []
        delivered = service.delivered()
        for report in reports:
            assert sorted(t for t in delivered if t in set(report["ids"])) == sorted(report["ids"]), report["n"]
        assert len(delivered) == len(set(delivered))
    finally:
        service.close()


MULTIPROCESSING = """
    import multiprocessing as mp, sys
    from trace_ingest import TraceIngest
    client = TraceIngest("tik_x", sys.argv[1], flush_interval=60)

    def work(n):
        for _ in range(n):
            with client.trace("job"):
                pass

    if __name__ == "__main__":
        context = mp.get_context("fork")
        processes = [context.Process(target=work, args=(40,)) for _ in range(3)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        pool = context.Pool(2)
        pool.map(work, [30, 30])
        pool.close()
        pool.join()
        print([p.exitcode for p in processes])
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_multiprocessing_children_that_return_normally_deliver_without_a_flush() -> None:
    service = FakeService()
    try:
        result = run_python(MULTIPROCESSING, args=[service.url])
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "[0, 0, 0]"
        delivered = service.delivered()
        assert len(delivered) == 3 * 40 + 2 * 30 and len(set(delivered)) == len(delivered)
    finally:
        service.close()
