"""Exit is a delivery moment: each way a program really ends, in a real child process, either
delivers what it handed over or says, in one line, how many traces were not delivered and why."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .fake_service import FakeService

SRC = str(Path(__file__).resolve().parents[1] / "src")


def run_program(path: Path, source: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    path.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(path), *args], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=timeout)


def sdk_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "trace_ingest" in line]


@pytest.mark.parametrize("start_method", ["spawn", "forkserver", "fork"])
def test_the_children_of_a_pool_ended_by_terminate_deliver_what_they_handed_over(tmp_path: Path, start_method: str) -> None:
    service = FakeService()
    try:
        # `with Pool(...)` ends with terminate(): SIGTERM to each child, which left without atexit. Each
        # child is held inside a task when it comes, so SIGTERM is its only way out (an idle child may
        # also be told to stop first, and leave through atexit: a race, not a guarantee).
        result = run_program(
            tmp_path / "pool_program.py",
            """
            import multiprocessing as mp
            import os
            import sys
            import time
            from pathlib import Path
            from trace_ingest import TraceIngest

            client = TraceIngest("tik_x", sys.argv[1], flush_interval=60)

            def work(n):
                with client.trace("job", attributes={"n": n}):
                    pass
                return n

            def hold(marks):
                (Path(marks) / str(os.getpid())).touch()
                time.sleep(60)

            if __name__ == "__main__":
                marks = Path(sys.argv[3])
                marks.mkdir()
                with mp.get_context(sys.argv[2]).Pool(2) as pool:
                    print(len(pool.map(work, range(40))))
                    for _ in range(2):
                        pool.apply_async(hold, (str(marks),))
                    deadline = time.monotonic() + 30
                    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
                        time.sleep(0.01)
            """,
            service.url,
            start_method,
            str(tmp_path / "marks"),
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "40"
        delivered = service.delivered()
        assert len(delivered) == 40 and len(set(delivered)) == 40
    finally:
        service.close()


def test_a_program_whose_traces_the_service_refuses_with_500_says_so_in_one_line_at_exit(tmp_path: Path) -> None:
    service = FakeService(lambda traces, key: (500, {"code": "internal_error", "detail": "boom"}))
    try:
        started = time.monotonic()
        result = run_program(
            tmp_path / "program.py",
            """
            import sys
            from trace_ingest import TraceIngest

            client = TraceIngest("tik_x", sys.argv[1], flush_interval=60, shutdown_timeout=2)
            for i in range(10):
                with client.trace("t"):
                    pass
            """,
            service.url,
        )
        elapsed = time.monotonic() - started
        assert result.returncode == 0, result.stderr
        assert service.requests, "the exit flush tried"
        at_exit = [line for line in sdk_lines(result.stderr) if "at exit" in line]
        assert len(at_exit) == 1, result.stderr
        assert "10 trace(s)" in at_exit[0] and f"{service.url}/v1/traces/ingest" in at_exit[0] and "500" in at_exit[0] and "lost" in at_exit[0]
        assert sdk_lines(result.stderr)[-1] == at_exit[0]
        assert elapsed < 2 + 5, "the exit flush is bounded by shutdown_timeout"
    finally:
        service.close()


def test_a_program_that_cannot_reach_the_service_ends_on_a_line_saying_its_traces_are_lost(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens there now: every connect is refused.
    url = f"http://127.0.0.1:{port}"
    result = run_program(
        tmp_path / "program.py",
        """
        import sys
        from trace_ingest import TraceIngest

        client = TraceIngest("tik_x", sys.argv[1], flush_interval=0.01, shutdown_timeout=1)
        for i in range(3):
            with client.trace("t"):
                pass
        client.flush(0.3)
        """,
        url,
    )
    assert result.returncode == 0, result.stderr
    lines = sdk_lines(result.stderr)
    assert lines, result.stderr
    last = lines[-1]
    assert "at exit" in last and "3 trace(s)" in last and "lost" in last and f"{url}/v1/traces/ingest" in last and "ConnectionRefusedError" in last, result.stderr
    assert sum("at exit" in line for line in lines) == 1


def test_a_program_with_a_spool_says_at_exit_where_its_unsent_traces_wait(tmp_path: Path) -> None:
    service = FakeService(lambda traces, key: (503, {"code": "unavailable"}))
    try:
        result = run_program(
            tmp_path / "program.py",
            """
            import sys
            from trace_ingest import TraceIngest

            client = TraceIngest("tik_x", sys.argv[1], flush_interval=60, shutdown_timeout=0.5, spool_dir=sys.argv[2])
            for i in range(4):
                with client.trace("t"):
                    pass
            """,
            service.url,
            str(tmp_path / "spool"),
        )
        assert result.returncode == 0, result.stderr
        last = sdk_lines(result.stderr)[-1]
        assert "at exit" in last and "4 trace(s)" in last and str(tmp_path / "spool") in last and "next start" in last and "lost" not in last, result.stderr
    finally:
        service.close()


def test_in_a_multiprocessing_child_only_a_default_sigterm_gets_the_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    from trace_ingest import TraceIngest, _process

    monkeypatch.setattr(_process, "_in_multiprocessing_child", lambda: True)
    before = signal.getsignal(signal.SIGTERM)
    try:

        def programs_own(signum: int, frame: object) -> None:
            pass

        signal.signal(signal.SIGTERM, programs_own)
        monkeypatch.setattr(_process, "_terminate_handled_in", None)
        TraceIngest("tik_x", "http://127.0.0.1:9", serverless=True)
        assert signal.getsignal(signal.SIGTERM) is programs_own
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        TraceIngest("tik_x", "http://127.0.0.1:9", serverless=True)
        assert signal.getsignal(signal.SIGTERM) is _process._terminated
    finally:
        signal.signal(signal.SIGTERM, before)
