"""Benchmark: RecordIO-protobuf decode (vectorised vs general vs per-record protobuf) and
encode (vectorised writer vs per-record protobuf). Prints timings; asserts nothing.

    .venv/bin/python bench/inprocess/recordio_decode.py [--rows 10000] [--features 50]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from smserve.codecs.recordio.codec import read_records
from smserve.codecs.recordio.framing import frame, iter_frames
from smserve.codecs.recordio.records import decode_general
from smserve.codecs.recordio.schema import Record
from smserve.codecs.recordio.writer import encode_prediction
from smserve.types import Prediction


def dense_body(matrix: np.ndarray) -> bytes:
    """What the SDK's RecordSerializer writes: one Record per row, flag-0 frames."""
    frames = []
    for row in matrix:
        record = Record()
        record.features["values"].float32_tensor.values.extend(row.tolist())
        frames.append(frame(record.SerializeToString()))
    return b"".join(frames)


def per_record_protobuf(body: bytes) -> np.ndarray:
    """The naive reader: parse each payload with protobuf, copy its values out."""
    rows = []
    for item in iter_frames(body):
        record = Record.FromString(item.payload)
        rows.append(np.array(record.features["values"].float32_tensor.values, dtype=np.float32))
    return np.vstack(rows)


def per_record_encode(prediction: Prediction) -> bytes:
    frames = []
    for row in range(prediction.n_rows):
        record = Record()
        for name, values in prediction.items():
            tensor = record.label[name].float32_tensor
            tensor.values.extend(np.atleast_1d(values[row]).tolist())
        frames.append(frame(record.SerializeToString(deterministic=True)))
    return b"".join(frames)


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    matrix = np.random.default_rng(0).random((args.rows, args.features), dtype=np.float32)
    body = dense_body(matrix)
    assert np.array_equal(read_records(body)[0], decode_general(body)[0])
    fast = best_of(lambda: read_records(body), args.repeat)
    general = best_of(lambda: decode_general(body), args.repeat)
    naive = best_of(lambda: per_record_protobuf(body), args.repeat)
    print(f"decode {args.rows}x{args.features} float32 ({len(body) / 1e6:.2f} MB)")
    print(f"  vectorised (read_records)  {fast * 1e3:8.2f} ms")
    print(f"  general path               {general * 1e3:8.2f} ms  ({general / fast:.1f}x)")
    print(f"  per-record protobuf        {naive * 1e3:8.2f} ms  ({naive / fast:.1f}x)")
    rng = np.random.default_rng(1)
    outputs = {
        "closest_cluster": rng.integers(0, 10, args.rows).astype(np.float32),
        "distance_to_cluster": rng.random(args.rows, dtype=np.float32),
    }
    prediction = Prediction(outputs)
    assert encode_prediction(prediction) == per_record_encode(prediction)
    writer = best_of(lambda: encode_prediction(prediction), args.repeat)
    protobuf = best_of(lambda: per_record_encode(prediction), args.repeat)
    print(f"encode {args.rows} k-means rows (2 scalar outputs)")
    print(f"  vectorised writer          {writer * 1e3:8.2f} ms")
    print(f"  per-record protobuf        {protobuf * 1e3:8.2f} ms  ({protobuf / writer:.1f}x)")


if __name__ == "__main__":
    main()
