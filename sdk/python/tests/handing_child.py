"""A program that hands traces over to the SDK without end, until it is killed: run by the kill -9
tests (tests/test_spool.py) and by the bench's spool-loss rows (bench/sdk_spool_loss.py).

    python handing_child.py BASE_URL SPOOL_DIR SPOOL_SYNC LOG [PAUSE_EVERY]

Each trace handed over is logged to LOG as `<trace id> <time.monotonic()>` once `end` returned.
PAUSE_EVERY > 0 sleeps 10 ms after every that many traces (the tests, whose child shares the
machine with the service thread answering it); 0, the default, never pauses (the bench)."""

import os
import sys
import time

from trace_ingest import TraceIngest


def main() -> None:
    base_url, spool_dir, sync, log_path = sys.argv[1:5]
    pause_every = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    # A queue that never fills: a trace dropped as queue_full is reported, not lost by the spool.
    client = TraceIngest(
        "tik_x", base_url, spool_dir=spool_dir, spool_sync=sync, flush_interval=0.02, max_batch_traces=25, max_queue_traces=10_000_000, max_queue_bytes=1 << 40
    )
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    n = 0
    while True:
        with client.trace("t", attributes={"n": n}) as trace:
            with client.span("s", input={"q": "x" * (n % 300)}):
                pass
        os.write(log, f"{trace.trace_id} {time.monotonic()}\n".encode())
        n += 1
        if pause_every and n % pause_every == 0:
            time.sleep(0.01)


if __name__ == "__main__":
    main()
