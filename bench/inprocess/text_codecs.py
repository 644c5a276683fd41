"""Benchmark: the text codecs (CSV decode/encode, libsvm decode, JSON/JSON Lines decode/encode)
on generated bodies, against straightforward Python references. Prints timings; asserts nothing.

    .venv/bin/python bench/inprocess/text_codecs.py [--rows 10000]
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import orjson

from smserve.codecs.csv import CsvCodec
from smserve.codecs.csv_cells import token_cells
from smserve.codecs.json import JsonCodec
from smserve.codecs.jsonlines import JsonLinesCodec
from smserve.codecs.libsvm import LibsvmCodec
from smserve.media import MediaType
from smserve.types import Prediction


def best_of(fn: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times) * 1000


def csv_text(matrix: np.ndarray) -> bytes:
    """Rows of ``str(float)``; NaN is written as an empty field."""
    rows = (",".join("" if v != v else str(v) for v in row) for row in matrix.tolist())
    return "\n".join(rows).encode()


def libsvm_text(n_rows: int, nnz: int, width: int) -> bytes:
    rng = np.random.default_rng(0)
    columns = np.sort(rng.random((n_rows, width)).argsort(axis=1)[:, :nnz], axis=1)
    values = rng.random((n_rows, nnz), dtype=np.float32)
    lines = (
        f"{i % 2} " + " ".join(f"{c}:{v:.6g}" for c, v in zip(cols, vals, strict=True))
        for i, (cols, vals) in enumerate(zip(columns.tolist(), values.tolist(), strict=True))
    )
    return "\n".join(lines).encode()


def reference_csv_encode(prediction: Prediction) -> bytes:
    rows = zip(*(a.astype(np.float64).tolist() for _, a in prediction.items()), strict=True)
    return "".join(",".join(map(repr, row)) + "\n" for row in rows).encode()


def contributions_like(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 51) float32 shaped like explanations: small values, 10 % exact zeros (features a
    row's paths never split on) and 0.2 % below 1e-4 (which repr writes with an exponent)."""
    values = rng.normal(scale=0.05, size=(n, 51))
    values[rng.random(values.shape) < 0.1] = 0.0
    tiny = rng.random(values.shape) < 0.002
    values[tiny] = rng.normal(scale=1e-5, size=int(tiny.sum()))
    return values.astype(np.float32)


def wide_encode(n: int, rng: np.random.Generator) -> None:
    """The CSV writer on a wide float output against the formatter alone (one orjson call
    over the same float64 matrix: the floor for this formatting) and the per-token writer."""
    values = contributions_like(n, rng)
    prediction = Prediction({"c": values}, columns=("c",))
    writer = best_of(lambda: CsvCodec().encode(prediction))
    matrix = values.astype(np.float64)
    formatter = best_of(lambda: orjson.dumps(matrix, option=orjson.OPT_SERIALIZE_NUMPY))
    tokens = best_of(lambda: b"\n".join(token_cells(values, quoted=False)))
    print(
        f"csv encode {n}x51 contributions: {writer:.1f} ms = {writer / formatter:.2f}x the "
        f"formatter alone ({formatter:.1f} ms); per-token writer {tokens:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    n = parser.parse_args().rows
    rng = np.random.default_rng(1)
    media = MediaType("x")
    csv, json, jsonlines = CsvCodec(), JsonCodec(), JsonLinesCodec()
    for width in (2, 50):
        matrix = rng.normal(size=(n, width)).astype(np.float32)
        body = csv_text(matrix)
        sparse = np.where(rng.random(matrix.shape) < 0.1, np.nan, matrix)
        holes = csv_text(sparse)  # the tolerant path
        rows = orjson.dumps({"instances": [{"features": r} for r in matrix.tolist()]})
        lines = b"\n".join(orjson.dumps(r) for r in matrix.tolist())
        for name, decode, text in [
            ("csv", csv.decode, body),
            ("csv with 10% empty fields", csv.decode, holes),
            ("json", json.decode, rows),
            ("jsonlines", jsonlines.decode, lines),
        ]:
            print(f"{name} decode {n}x{width}: {best_of(partial(decode, text, media)):.1f} ms")
    prediction = Prediction(
        {
            "closest_cluster": rng.integers(0, 10, n).astype(np.float32),
            "distance_to_cluster": rng.random(n, dtype=np.float32),
        }
    )
    print(
        f"csv encode {n}x2: {best_of(lambda: csv.encode(prediction)):.1f} ms "
        f"(reference {best_of(lambda: reference_csv_encode(prediction)):.1f} ms)"
    )
    wide_encode(n, rng)
    print(f"json encode {n}x2: {best_of(lambda: json.encode(prediction)):.1f} ms")
    print(f"jsonlines encode {n}x2: {best_of(lambda: jsonlines.encode(prediction)):.1f} ms")
    body = libsvm_text(n, 50, 1000)
    libsvm = LibsvmCodec()
    print(
        f"libsvm decode {n} rows x 50 nonzeros ({len(body) / 1e6:.1f} MB): "
        f"{best_of(lambda: libsvm.decode(body, media)):.1f} ms"
    )
    values = " ".join(token.split(":")[1] for token in body.decode().split() if ":" in token)
    floor = best_of(lambda: np.loadtxt(io.StringIO(values), dtype=np.float32, comments=None))
    print(f"  (np.loadtxt of just its {n * 50} values: {floor:.1f} ms)")


if __name__ == "__main__":
    main()
