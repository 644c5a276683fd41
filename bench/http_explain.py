"""Explanations over real HTTP (gunicorn, one worker, keep-alive), beside the plain predict
in the same run: XGBoost binary:logistic, 100 trees of depth 6, 50 features.

Per-request outputs go in X-Amzn-SageMaker-Custom-Attributes (``outputs=<key>``); the plain
request sends none (the endpoint default, ``score``). CSV in; CSV out and RecordIO out (where
the 51 values per row are cheapest to write). Targets: 1 row with ``contributions`` <= 3x the
plain 1-row p50; 10,000 rows with ``approximate_contributions`` <= 2x the plain 10,000-row
request (mean); the exact 10,000-row cost is reported.

    .venv/bin/python bench/http_explain.py [--repeat-small 1000] [--repeat-large 10]
        [--frontend auto|nginx|gunicorn]   (SMSERVE_FRONTEND for the server)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402

ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"
CSV, RECORDIO = "text/csv", "application/x-recordio-protobuf"
KEYS = (None, "approximate_contributions", "contributions")


def post(client: harness.Client, body: bytes, accept: str, key: str | None) -> bytes:
    headers = {"Content-Type": CSV, "Accept": accept}
    if key is not None:
        headers[ATTRIBUTES] = f"outputs={key}"
    client.conn.request("POST", "/invocations", body=body, headers=headers)
    response = client.conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
    return data


def timed(client: harness.Client, body: bytes, accept: str, key: str | None, n: int) -> list[float]:
    warmup = 20 if n > 50 else 2
    return harness.timings_ms(lambda: post(client, body, accept, key), n, warmup=warmup)


def small(client: harness.Client, repeat: int) -> None:
    body = harness.csv_body(harness.rows(1))
    p50 = {}
    for key in KEYS:
        samples = timed(client, body, CSV, key, repeat)
        p50[key] = harness.percentile(samples, 50)
        print(f"  1 row      {key or 'plain':26s} {harness.summary(samples)}")
    ratio = p50["contributions"] / p50[None]
    print(f"  1-row contributions / plain (p50): {ratio:.2f}x   (target <= 3x)")


def large(client: harness.Client, repeat: int, accept: str) -> None:
    body = harness.csv_body(harness.rows(10_000))
    mean = {}
    for key in KEYS:
        n = max(3, repeat // 3) if key == "contributions" else repeat
        samples = timed(client, body, accept, key, n)
        mean[key] = statistics.fmean(samples)
        print(f"  10k x 50 -> {accept:31s} {key or 'plain':26s} {harness.summary(samples)}")
    approx = mean["approximate_contributions"] / mean[None]
    exact = mean["contributions"] / mean[None]
    print(f"  10k approximate / plain (mean): {approx:.2f}x   (target <= 2x)")
    print(f"  10k exact / plain (mean): {exact:.2f}x   (reported)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat-small", type=int, default=1000)
    parser.add_argument("--repeat-large", type=int, default=10)
    parser.add_argument("--frontend", default="auto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp, "xgb")
        harness.build_xgboost(model_dir)
        with harness.server(model_dir, workers=1, SMSERVE_FRONTEND=args.frontend) as port:
            client = harness.Client(port)
            print(f"== xgboost (100 trees, depth 6, 50 features), 1 worker, {args.frontend}")
            small(client, args.repeat_small)
            for accept in (CSV, RECORDIO):
                large(client, args.repeat_large, accept)


if __name__ == "__main__":
    main()
