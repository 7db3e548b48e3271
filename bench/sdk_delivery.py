"""Run by bench/sdk-python.ts (group `sdk-python`) with the ingest URL and a key of a running
`npm start` stack: the Python contender of the delivery races (bench/sdk-delivery.ts, the same
races as TypeScript's). It reads one command a line on stdin and answers one JSON line:

- `prepare`: a new client (serverless) with the round's traces queued → `{"spans": spans per trace}`;
- `race sdk` or `race bare`: the client's flush (from `flush()` to the last answer) and, at the same
  time, from a process of its own (this file with `--bare`), a bare keep-alive http.client loop
  posting the gzip bodies of the SDK's last round one after another, each with a new
  Idempotency-Key (as the SDK sends one), again and again until the flush is over; the one named
  sends its first request first → `{"sdk_seconds": …, "bare_traces": the traces the bare client had
  answered within the flush's time, a request cut by its end counted for the share of it that fell
  inside}`. With no bodies yet (the first round), the SDK runs alone and `bare_traces` is null.

It exits when its stdin closes."""

from __future__ import annotations

import http.client
import json
import select
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Callable, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sdk_caller_cost import SPANS, workload  # noqa: E402

from trace_ingest import TraceIngest  # noqa: E402
from trace_ingest._policy import Answer  # noqa: E402
from trace_ingest._transport import HttpTransport  # noqa: E402



class Keeping:
    """The SDK's own transport, keeping each gzip body it sent for the bare client to send again."""

    def __init__(self, inner: HttpTransport) -> None:
        self.inner = inner
        self.bodies: list[bytes] = []
        self.counts: list[int] = []
        self.on_first_request: Callable[[], None] | None = None

    def post(self, body: bytes, headers: Mapping[str, str], meanwhile: Callable[[], None] | None = None) -> Answer:
        first, self.on_first_request = self.on_first_request, None
        if first is not None:
            # Once the SDK's first request is written, before the SDK's own work meanwhile.
            then = meanwhile
            meanwhile = (lambda: (first(), then())) if then is not None else first  # noqa: E731
        answer = self.inner.post(body, headers, meanwhile)
        self.bodies.append(body)
        self.counts.append(answer.body.get("accepted", 0) if isinstance(answer.body, dict) else 0)
        return answer


def bare_client(url: str, api_key: str) -> None:
    """`--bare`: `load DIR` reads the bodies (`N.gz` with `N.count` traces) → `{}`; `go` posts them in a loop
    (printing `{}` once its first request is written) until a line `stop` arrives, then prints
    `{"requests": [[start, end, traces], …]}` (time.monotonic())."""
    parsed = urllib.parse.urlsplit(url)
    bodies: list[tuple[bytes, int]] = []
    for line in sys.stdin:
        command = line.split()
        if command[0] == "load":
            folder = Path(command[1])
            bodies = [(folder.joinpath(f"{n}.gz").read_bytes(), int(folder.joinpath(f"{n}.count").read_text())) for n in range(len(list(folder.glob("*.gz"))))]
            print("{}", flush=True)
            continue
        # A new connection per race, as the SDK's client: the stack closes one idle for 5 s between races.
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        requests: list[list[float]] = []
        while not select.select([sys.stdin], [], [], 0)[0]:
            body, count = bodies[len(requests) % len(bodies)]
            headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", "X-API-Key": api_key, "Idempotency-Key": str(uuid.uuid4())}
            started = time.monotonic()
            connection.request("POST", parsed.path, body=body, headers=headers)
            if not requests:
                print("{}", flush=True)
            response = connection.getresponse()
            answer = json.loads(response.read())
            if response.status != 200 or answer.get("accepted") != count:
                raise RuntimeError(f"bare client: {response.status} {answer}")
            requests.append([started, time.monotonic(), count])
        sys.stdin.readline()  # the `stop`
        connection.close()
        print(json.dumps({"requests": requests}), flush=True)


class Contender:
    def __init__(self, url: str, api_key: str, traces: int) -> None:
        self.url, self.api_key, self.traces = url, api_key, traces
        self.client: TraceIngest | None = None
        self.transport: Keeping | None = None
        self.bare = subprocess.Popen([sys.executable, __file__, "--bare", url, api_key], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.bodies = tempfile.TemporaryDirectory(prefix="bench-sdk-delivery-")
        self.loaded = False

    def ask_bare(self, command: str) -> dict:
        assert self.bare.stdin is not None and self.bare.stdout is not None
        self.bare.stdin.write(command + "\n")
        self.bare.stdin.flush()
        line = self.bare.stdout.readline()
        if not line:
            raise RuntimeError(f"the bare client ended at {command!r}")
        return json.loads(line)

    def prepare(self) -> None:
        self.transport = Keeping(HttpTransport(self.url.removesuffix("/v1/traces/ingest"), 30.0))
        self.client = TraceIngest(self.api_key, transport=self.transport, serverless=True, max_queue_traces=self.traces)
        for n in range(self.traces):
            workload(self.client, n)

    def go(self) -> None:
        assert self.bare.stdin is not None
        self.bare.stdin.write("go\n")
        self.bare.stdin.flush()

    def race(self, first: str) -> dict:
        assert self.client is not None and self.transport is not None and self.bare.stdin is not None, "prepare first"
        if self.loaded and first == "bare":
            self.go()
            self.bare.stdout.readline()  # its first request is written
        elif self.loaded:
            self.transport.on_first_request = self.go
        started = time.monotonic()
        report = self.client.flush()
        ended = time.monotonic()
        bare_traces = None
        if self.loaded:
            if first == "sdk":
                self.bare.stdout.readline()
            requests = self.ask_bare("stop")["requests"]
            bare_traces = sum(n * max(0.0, min(end, ended) - max(start, started)) / (end - start) for start, end, n in requests)
        self.client.shutdown(0)
        if report.sent != self.traces:
            raise RuntimeError(f"the SDK delivered {report}")
        folder = Path(self.bodies.name)
        for n, (body, count) in enumerate(zip(self.transport.bodies, self.transport.counts)):
            folder.joinpath(f"{n}.gz").write_bytes(body)
            folder.joinpath(f"{n}.count").write_text(str(count))
        self.ask_bare(f"load {folder}")
        self.loaded = True
        return {"sdk_seconds": ended - started, "bare_traces": bare_traces}


def main() -> None:
    if sys.argv[1] == "--bare":
        bare_client(sys.argv[2], sys.argv[3])
        return
    url, api_key, traces = sys.argv[1], sys.argv[2], int(sys.argv[3])
    contender = Contender(url, api_key, traces)
    for line in sys.stdin:
        command = line.strip()
        if command == "prepare":
            contender.prepare()
            answer: dict = {"spans": SPANS}
        elif command.startswith("race "):
            answer = contender.race(command.split()[1])
        else:
            raise SystemExit(f"unknown command {command!r}")
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
