"""Parquet and Arrow-stream bodies of N rows x 50 float32 columns decoded in-process by the
serving codecs, against a floor and a peer measured in the same run:

* floor: the bytes read into an Arrow table alone (``pq.read_table``, ``ipc.open_stream``):
  what any decoder pays before it has a matrix;
* peer: that read plus Arrow's own row-major conversion, ``RecordBatch.to_tensor(
  null_to_nan=True, row_major=True)`` per batch (the C++ path ``codecs/csv_arrow.py`` uses).

``--against <src>`` also runs the same measurement on another tree's ``src`` (a ``git archive``
copy, on PYTHONPATH in a subprocess) and prints its decode times beside this tree's. Medians of
``--repeat`` decodes, one CPU (run it under ``taskset -c 0``); asserts nothing.

    taskset -c 0 .venv/bin/python bench/inprocess/columnar_decode.py [--rows 10000 30000 100000]
        [--repeat 15] [--against /tmp/prev/src]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared.timing import median_of  # noqa: E402
from smserve import media  # noqa: E402
from smserve.codecs.arrow import ArrowCodec  # noqa: E402
from smserve.codecs.base import DecodeContext  # noqa: E402
from smserve.codecs.parquet import ParquetCodec  # noqa: E402
from smserve.media import MediaType  # noqa: E402

N_FEATURES = 50
FORMATS = {"parquet": media.PARQUET, "arrow-stream": media.ARROW_STREAM}


def bodies(n_rows: int) -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    table = pa.table({f"f{i}": rng.normal(size=n_rows).astype(np.float32) for i in range(50)})
    parquet, stream = io.BytesIO(), pa.BufferOutputStream()
    pq.write_table(table, parquet)
    with pa.ipc.new_stream(stream, table.schema) as writer:
        writer.write_table(table)
    return {"parquet": parquet.getvalue(), "arrow-stream": bytes(stream.getvalue())}


def read_table(name: str, body: bytes) -> pa.Table:
    if name == "parquet":
        return pq.read_table(pa.BufferReader(body))
    return pa.ipc.open_stream(pa.BufferReader(body)).read_all()


def peer(name: str, body: bytes) -> np.ndarray:
    blocks = [
        np.asarray(batch.to_tensor(null_to_nan=True, row_major=True))
        for batch in read_table(name, body).to_batches()
    ]
    return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]


def decoded(name: str, body: bytes) -> np.ndarray:
    codec = ParquetCodec() if name == "parquet" else ArrowCodec()
    return np.asarray(codec.decode(body, MediaType(FORMATS[name]), DecodeContext()).features)


def measure(rows: list[int], repeat: int) -> dict[str, dict[str, float]]:
    """{"<format> <rows>": {"floor", "peer", "smserve"} in ms}; checks both give one matrix."""
    results = {}
    for n_rows in rows:
        for name, body in bodies(n_rows).items():
            np.testing.assert_array_equal(decoded(name, body), peer(name, body))
            results[f"{name} {n_rows}"] = {
                label: median_of(partial(action, name, body), repeat) * 1000
                for label, action in (("floor", read_table), ("peer", peer), ("smserve", decoded))
            }
    return results


def against(src: Path, rows: list[int], repeat: int) -> dict[str, dict[str, float]]:
    command = [sys.executable, __file__, "--json", "--repeat", str(repeat), "--rows"]
    env = {**os.environ, "PYTHONPATH": str(src)}
    output = subprocess.run(
        command + [str(n) for n in rows], env=env, check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, dict[str, float]] = json.loads(output)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    results = measure(args.rows, args.repeat)
    if args.json:
        print(json.dumps(results))
        return 0
    other = against(args.against, args.rows, args.repeat) if args.against else {}
    for case, ms in results.items():
        line = (
            f"{case:>20} rows x {N_FEATURES}: floor (read) {ms['floor']:6.2f} ms, "
            f"peer (read + to_tensor) {ms['peer']:6.2f} ms, smserve {ms['smserve']:6.2f} ms = "
            f"{ms['smserve'] / ms['peer']:.2f}x the peer, {ms['smserve'] / ms['floor']:.2f}x "
            "the floor"
        )
        if case in other:
            line += f"; {args.against}: {other[case]['smserve']:.2f} ms"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
