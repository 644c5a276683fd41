"""``/ping`` and ``/metrics`` while every worker is inside a long request (asynchronous
inference allows an hour): a real server (nginx, two workers of one thread) and a real model
whose requests take ``--seconds`` each: XGBoost, 1,000 trees of depth 8 on 50 features,
asked for exact SHAP contributions on as many rows as that takes (calibrated first).

While both long requests run, one client asks ``GET /ping`` (and, in turn, the metrics page)
every 50 ms and reports p50/p99/max; SageMaker wants /ping within a few seconds at most.
``--src`` serves another tree instead (``PYTHONPATH``), e.g. the previous one, where both
paths queued behind inference (each call then waits up to ``--client-timeout-s``).

    .venv/bin/python bench/load/ping_under_load.py [--seconds 30] [--src /tmp/prev/src] \\
        [--trees 1000]
"""

from __future__ import annotations

import argparse
import http.client
import sys
import tempfile
import threading
import time
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402

ATTRIBUTES = {"X-Amzn-SageMaker-Custom-Attributes": "outputs=contributions"}


def main() -> None:
    args = _arguments()
    env = {"SMSERVE_FRONTEND": "nginx", "SAGEMAKER_MODEL_SERVER_TIMEOUT": "3600"}
    if args.src:
        env["PYTHONPATH"] = args.src
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = Path(scratch) / "model"
        harness.build_xgboost(model_dir, n_trees=args.trees, depth=8)
        with harness.server(model_dir, workers=2, **env) as port:
            rows = _calibrate(port, args.seconds)
            print(f"server: {'this tree' if not args.src else args.src}; {rows} rows a request")
            idle = _poll(port, lambda: False, "/ping", 100, args.client_timeout_s)
            print(f"idle:  /ping  {_summary(idle)}")
            _under_load(port, rows, args)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of a long request")
    parser.add_argument("--src", help="serve another tree's src directory instead")
    parser.add_argument("--client-timeout-s", type=float, default=10.0)
    parser.add_argument("--trees", type=int, default=1000, help="of the model (depth 8)")
    return parser.parse_args()


def _long_request(port: int, rows: int) -> float:
    body = harness.csv_body(harness.rows(rows))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    started = time.perf_counter()
    headers = {"Content-Type": "text/csv", **ATTRIBUTES}
    conn.request("POST", "/invocations", body=body, headers=headers)
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}")
    conn.close()
    return time.perf_counter() - started


def _calibrate(port: int, seconds: float) -> int:
    """Rows for one request of about ``seconds`` (both workers busy: each has one CPU)."""
    rows = 20
    while True:
        took = _long_request(port, rows)
        if took > 1.0:
            return max(1, int(rows * seconds / took))
        rows *= 4


def _under_load(port: int, rows: int, args: argparse.Namespace) -> None:
    """Poll while both workers are inside a long request; retried when they were not.

    A busy gthread worker still accepts connections and queues their requests, so four long
    requests are sent (each on its own connection) and the polls are kept only if the first
    two to finish ran side by side (the second took under 1.5x the first): one per worker."""
    for attempt in range(1, 4):
        durations, samples = _attempt(port, rows, args)
        first, second = sorted(durations)[:2]
        if second < 1.5 * first:
            print(f"long requests: {', '.join(f'{d:.1f} s' for d in durations)}")
            for path, values in samples.items():
                print(f"busy:  {path:<8} {_summary(values)}")
            return
        print(f"attempt {attempt}: the first two long requests shared a worker; again")
    print("no attempt had both workers busy at once")


def _attempt(
    port: int, rows: int, args: argparse.Namespace
) -> tuple[list[float], dict[str, list[float]]]:
    durations: list[float] = []
    threads = [
        threading.Thread(target=lambda: durations.append(_long_request(port, rows)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
        time.sleep(0.3)
    done = lambda: len(durations) > 0  # noqa: E731 - the first finished: a worker is free
    samples: dict[str, list[float]] = {"/ping": [], "/metrics": []}
    while not done():
        for path in samples:
            samples[path] += _poll(port, done, path, 1, args.client_timeout_s)
    for thread in threads:
        thread.join()
    return durations, samples


def _poll(port: int, stop: object, path: str, count: int, timeout_s: float) -> list[float]:
    """``count`` GETs of ``path`` 50 ms apart; ms each (a timeout counts as its length)."""
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            conn.close()
        except OSError:
            pass
        samples.append((time.perf_counter() - started) * 1000)
        time.sleep(0.05)
    return samples


def _summary(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    p50, p99 = harness.percentile(samples, 50), harness.percentile(samples, 99)
    return f"n={len(samples)} p50 {p50:.2f} ms p99 {p99:.2f} ms max {max(samples):.2f} ms"


if __name__ == "__main__":
    main()
