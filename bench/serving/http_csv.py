"""CSV -> CSV over real HTTP (gunicorn, keep-alive) against the in-process floor.

The floor is the same work done directly in Python with no server: np.loadtxt, predict,
format the lines. Prints 1-row latency (p50/p99) and 10,000 x 50 request time for XGBoost and
k-means, with the ratio to the floor.

    .venv/bin/python bench/serving/http_csv.py [--repeat-small 2000] [--repeat-large 20]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402


def lines(values: np.ndarray) -> bytes:
    return ("\n".join(map(repr, values.astype(np.float64).tolist())) + "\n").encode()


def xgboost_floor(model_dir: Path) -> Callable[[bytes], bytes]:
    booster = harness.build_xgboost(model_dir)

    def floor(body: bytes) -> bytes:
        x = np.loadtxt(io.StringIO(body.decode()), delimiter=",", ndmin=2, dtype=np.float32)
        return lines(booster.inplace_predict(x))

    return floor


def kmeans_floor(model_dir: Path) -> Callable[[bytes], bytes]:
    centroids = harness.build_kmeans(model_dir).astype(np.float64)
    norms = (centroids**2).sum(axis=1)

    def floor(body: bytes) -> bytes:
        x = np.loadtxt(io.StringIO(body.decode()), delimiter=",", ndmin=2, dtype=np.float32)
        x64 = x.astype(np.float64)
        d2 = (x64**2).sum(axis=1)[:, None] - 2 * x64 @ centroids.T + norms
        best = d2.argmin(axis=1)
        dist = np.sqrt(np.maximum(d2[np.arange(len(best)), best], 0))
        rows = [f"{float(c)!r},{float(d)!r}" for c, d in zip(best, dist, strict=True)]
        return ("\n".join(rows) + "\n").encode()

    return floor


def measure(
    name: str, model_dir: Path, floor: Callable[[bytes], bytes], args: argparse.Namespace
) -> None:
    small, large = harness.csv_body(harness.rows(1)), harness.csv_body(harness.rows(10_000))
    floor_small = harness.timings_ms(lambda: floor(small), args.repeat_small)
    floor_large = harness.timings_ms(lambda: floor(large), args.repeat_large, warmup=2)
    with harness.server(model_dir, workers=1) as port:
        client = harness.Client(port)
        post = client.post
        assert post(small, "text/csv", "text/csv").count(b"\n") == 1
        http_small = harness.timings_ms(
            lambda: post(small, "text/csv", "text/csv"), args.repeat_small
        )
        http_large = harness.timings_ms(
            lambda: post(large, "text/csv", "text/csv"), args.repeat_large, warmup=2
        )
    report(name, floor_small, http_small, floor_large, http_large)


def report(name: str, fs: list[float], hs: list[float], fl: list[float], hl: list[float]) -> None:
    large_ratio = statistics.fmean(hl) / statistics.fmean(fl)
    print(f"== {name}")
    print(f"  1 row      floor {harness.summary(fs)}")
    print(f"  1 row      HTTP  {harness.summary(hs)}")
    print(f"  10k x 50   floor {harness.summary(fl)}")
    print(f"  10k x 50   HTTP  {harness.summary(hl)}")
    print(f"  10k ratio HTTP/floor (mean): {large_ratio:.2f}x   (target <= 1.5x)")
    print(f"  1-row HTTP p50: {harness.percentile(hs, 50):.3f} ms  (target <= 1 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat-small", type=int, default=2000)
    parser.add_argument("--repeat-large", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measure(
            "xgboost (100 trees, depth 6)", Path(tmp, "xgb"), xgboost_floor(Path(tmp, "xgb")), args
        )
        measure("k-means (k=10)", Path(tmp, "km"), kmeans_floor(Path(tmp, "km")), args)


if __name__ == "__main__":
    main()
