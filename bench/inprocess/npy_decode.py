"""Benchmark: application/x-npy decode (``codecs/npy.py``) of 10,000 x 50 rows against the CSV
decode of the same rows and the floor ``np.load`` of the same body (no checks, no conversion).
Also float64 and Fortran-order bodies (one conversion each), and the .npy encode of k-means'
two outputs. Prints timings (best of 7, CPU time); asserts nothing.

    .venv/bin/python bench/inprocess/npy_decode.py [--rows 10000] [--columns 50]
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable

import numpy as np

from smserve.codecs.csv import CsvCodec
from smserve.codecs.npy import NpyCodec
from smserve.media import CSV, NPY, MediaType
from smserve.types import Prediction


def best_of(fn: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times) * 1000


def saved(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--columns", type=int, default=50)
    args = parser.parse_args()
    rows = np.random.default_rng(1).normal(size=(args.rows, args.columns)).astype(np.float32)
    npy, csv, shape = NpyCodec(), CsvCodec(), f"{args.rows}x{args.columns}"
    text = io.StringIO()
    np.savetxt(text, rows, fmt="%.9g", delimiter=",")
    csv_body = text.getvalue().encode()
    csv_ms = best_of(lambda: csv.decode(csv_body, MediaType(CSV)))
    print(f"csv decode {shape} float32 ({len(csv_body) / 1e6:.1f} MB): {csv_ms:.2f} ms")
    for label, array in [
        ("float32", rows),
        ("float64", rows.astype(np.float64)),
        ("float64 Fortran-order", np.asfortranarray(rows.astype(np.float64))),
    ]:
        body = saved(array)
        ours = best_of(lambda body=body: npy.decode(body, MediaType(NPY)))
        floor = best_of(lambda body=body: np.load(io.BytesIO(body), allow_pickle=False))
        print(
            f"npy decode {shape} {label} ({len(body) / 1e6:.1f} MB): {ours:.3f} ms "
            f"(np.load {floor:.3f} ms; {ours / csv_ms:.4f}x the CSV decode)"
        )
    prediction = Prediction(
        {"closest_cluster": rows[:, 0].copy(), "distance_to_cluster": rows[:, 1].copy()}
    )
    print(f"npy encode {args.rows}x2: {best_of(lambda: npy.encode(prediction)):.3f} ms")
    print(f"csv encode {args.rows}x2: {best_of(lambda: csv.encode(prediction)):.3f} ms")


if __name__ == "__main__":
    main()
