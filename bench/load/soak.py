"""Soak the real server through nginx at saturation: N keep-alive clients send mixed batches
(1, 10, 100 and 1,000 rows; CSV and RecordIO, CSV answers) back to back to an XGBoost server
(binary:logistic, 100 trees, depth 6, 50 features) for --minutes.

Every --sample-seconds it records requests/s, rows/s, errors and the resident memory (VmRSS
from /proc) of each gunicorn worker. After the warm-up (--warmup-minutes) it must hold:

* 0 errors (a status other than 200, an answer with the wrong number of lines, a dropped
  connection) and 0 worker restarts;
* worker RSS growth < 5 % (all workers together, last sample against the end of warm-up);
* throughput drift < 10 % (requests/s of the last third of the samples against the first).

The exit status is 1 if any of them fails.

    .venv/bin/python bench/load/soak.py [--minutes 30] [--clients 8] [--workers 2]
                                   [--warmup-minutes 2] [--sample-seconds 60]
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from itertools import cycle
from pathlib import Path

import numpy as np

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.fuzz.fuzz_bodies import encode  # noqa: E402
from bench.shared import harness, proxied  # noqa: E402

BATCHES = (1, 10, 100, 1000)
FORMATS = ("text/csv", "application/x-recordio-protobuf")
MAX_RSS_GROWTH = 0.05
MAX_DRIFT = 0.10


@dataclass
class Counters:
    """Shared by the clients; the sampler takes deltas."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    rows: int = 0
    errors: int = 0
    examples: list[str] = field(default_factory=list)

    def done(self, rows: int) -> None:
        with self.lock:
            self.requests += 1
            self.rows += rows

    def error(self, example: str) -> None:
        with self.lock:
            self.errors += 1
            if len(self.examples) < 5:
                self.examples.append(example)

    def snapshot(self) -> tuple[int, int, int]:
        with self.lock:
            return self.requests, self.rows, self.errors


@dataclass(frozen=True)
class Sample:
    end_s: float
    requests_per_s: float
    rows_per_s: float
    errors: int
    rss_kib: dict[int, int]


def payloads() -> list[tuple[str, bytes, int]]:
    rng = np.random.default_rng(3)
    matrices = {n: rng.normal(size=(n, harness.N_FEATURES)).astype(np.float32) for n in BATCHES}
    return [(kind, encode(kind, matrices[n]), n) for n in BATCHES for kind in FORMATS]


def client(index: int, port: int, stop: threading.Event, counters: Counters) -> None:
    mix = payloads()
    work = cycle(mix[index % len(mix) :] + mix[: index % len(mix)])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        content_type, body, n = next(work)
        try:
            _predict(connection, content_type, body, n)
            counters.done(n)
        except (OSError, http.client.HTTPException, AssertionError) as exc:
            counters.error(f"{n} rows {content_type}: {exc!r}")
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.close()


def _predict(
    connection: http.client.HTTPConnection, content_type: str, body: bytes, n: int
) -> None:
    headers = {"Content-Type": content_type, "Accept": "text/csv"}
    connection.request("POST", "/invocations", body=body, headers=headers)
    response = connection.getresponse()
    answer = response.read()
    assert response.status == 200, f"HTTP {response.status}: {answer[:200]!r}"
    lines = answer.count(b"\n")
    assert lines == n, f"{lines} lines for {n} rows"


def sample(server: proxied.Proxied, counters: Counters, args: argparse.Namespace) -> list[Sample]:
    """Sample until --minutes have passed."""
    samples, started = [], time.monotonic()
    last = (0, 0, 0)
    end = started + args.minutes * 60
    while (now := time.monotonic()) < end:
        time.sleep(min(args.sample_seconds, end - now))
        current = counters.snapshot()
        seconds = time.monotonic() - now
        rss = {pid: proxied.rss_kib(pid) for pid in server.worker_pids()}
        requests, rows, errors = (c - p for c, p in zip(current, last, strict=True))
        samples.append(
            Sample(time.monotonic() - started, requests / seconds, rows / seconds, errors, rss)
        )
        print(_line(samples[-1]), flush=True)
        last = current
    return samples


def _line(s: Sample) -> str:
    rss = " ".join(f"{kib / 1024:.1f}" for kib in s.rss_kib.values())
    return (
        f"  {s.end_s / 60:6.2f} min  {s.requests_per_s:7.1f} req/s  {s.rows_per_s:9.0f} rows/s  "
        f"errors {s.errors}  worker RSS MiB: {rss}"
    )


def verdict(
    samples: list[Sample], counters: Counters, restarts: int, args: argparse.Namespace
) -> int:
    after = [s for s in samples if s.end_s > args.warmup_minutes * 60 + 1]
    warm = [s for s in samples if s not in after]
    if len(after) < 2 or not warm:
        print("FAILED: too few samples after the warm-up (lengthen --minutes or shorten samples)")
        return 1
    third = max(1, len(after) // 3)
    first = statistics.fmean(s.requests_per_s for s in after[:third])
    final = statistics.fmean(s.requests_per_s for s in after[-third:])
    drift = final / first - 1
    growth = sum(after[-1].rss_kib.values()) / sum(warm[-1].rss_kib.values()) - 1
    checks = {
        f"errors {counters.errors} (must be 0)": counters.errors == 0,
        f"worker restarts {restarts} (must be 0)": restarts == 0,
        f"worker RSS growth after warm-up {growth:+.2%} (must be < 5 %)": growth < MAX_RSS_GROWTH,
        f"throughput drift {drift:+.2%}: {first:.1f} -> {final:.1f} req/s over the first and "
        f"last {third} samples (must be within 10 %)": abs(drift) < MAX_DRIFT,
    }
    for check, ok in checks.items():
        print(f"  {'ok    ' if ok else 'FAILED'} {check}")
    for example in counters.examples:
        print(f"    error: {example}")
    return 0 if all(checks.values()) else 1


def main() -> int:
    args = _arguments()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        harness.build_xgboost(root / "model")
        with proxied.proxied(root / "model", root / "server.log", args.workers) as server:
            pids, boots = server.worker_pids(), server.boots()
            print(f"soak: {args.minutes} min, {args.clients} clients, {args.workers} workers "
                  f"{pids}, batches {BATCHES} rows x {FORMATS}", flush=True)  # fmt: skip
            counters, stop = Counters(), threading.Event()
            threads = [
                threading.Thread(target=client, args=(i, server.port, stop, counters))
                for i in range(args.clients)
            ]
            for thread in threads:
                thread.start()
            samples = sample(server, counters, args)
            stop.set()
            for thread in threads:
                thread.join()
            restarts = max(len(set(pids) - set(server.worker_pids())), server.boots() - boots)
            return verdict(samples, counters, restarts, args)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup-minutes", type=float, default=2.0)
    parser.add_argument("--sample-seconds", type=float, default=60.0)
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
