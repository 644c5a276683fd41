"""What decoding really costs against what the request's budget charges for it: each decoder
on bodies shaped to cost it the most per byte (empty fields, one-character values, empty
lists, tiny records, constant columns), each in a fresh process, its peak RSS growth from
/proc (VmHWM, reset before the decode) against the largest amount the decoder charged
(``RequestBudget.check``'s ``needed``). A ratio over 1 means a format is under-charged.

    .venv/bin/python bench/inprocess/decode_memory.py [--mb 4]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from smserve import budget as budget_module
from smserve.codecs import default_registry
from smserve.codecs.base import DecodeContext
from smserve.config import Settings
from smserve.errors import ClientError
from smserve.media import MediaType

MB = 1_000_000


def _columnar(kind: str, rows: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({f"f{i}": np.zeros(rows) for i in range(50)})  # constant: compresses best
    if kind == "parquet":
        sink = io.BytesIO()
        pq.write_table(table, sink, compression="zstd")
        return sink.getvalue()
    stream = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(stream, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(stream.getvalue())


def _records(size: int) -> bytes:
    from smserve.codecs.recordio.writer import encode_prediction
    from smserve.types import Prediction

    return encode_prediction(Prediction({"score": np.zeros(size // 24, np.float32)}))


def _sparse_records(size: int) -> bytes:
    from smserve.codecs.recordio.framing import frame
    from smserve.codecs.recordio.schema import Record

    message = Record()
    tensor = message.features["values"].float32_tensor
    tensor.values.append(1.0)
    tensor.keys.append(0)
    tensor.shape.append(4)
    one = frame(message.SerializeToString())
    return one * (size // len(one))


def _empty_records(size: int) -> bytes:
    from smserve.codecs.recordio.framing import frame

    return frame(b"") * (size // 8)


def _repeated(head: bytes, piece: bytes, tail: bytes) -> Callable[[int], bytes]:
    return lambda size: head + piece * (size // len(piece)) + tail


CSV, JSON, JSONL, LIBSVM = "text/csv", "application/json", "application/jsonlines", "text/libsvm"
RECORDIO, PARQUET = "application/x-recordio-protobuf", "application/x-parquet"
CASES: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "csv one-digit values": (CSV, _repeated(b"", b"1,1,1,1\n", b"")),
    "csv empty fields": (CSV, _repeated(b"", b",,,,,,,\n", b"")),
    "csv empty fields, blank lines": (CSV, _repeated(b"", b",,,\n\n", b"")),
    "csv one wide row": (CSV, _repeated(b"1", b",1", b"")),
    "json empty lists": (JSON, _repeated(b"[", b"[],[0],", b"[0]]")),
    "json rows of one-digit values": (JSON, _repeated(b"[", b"[1,1,1],", b"[1,1,1]]")),
    "json objects of names": (JSON, _repeated(b"[", b'{"f0":1,"f1":2},', b'{"f0":1,"f1":2}]')),
    "json nested empty lists": (JSON, _repeated(b"[", b"[[[[[[[[[]]]]]]]]],", b"[]]")),
    "jsonlines one-value rows": (JSONL, _repeated(b"", b"[1]\n", b"")),
    "jsonlines empty lists": (JSONL, _repeated(b"", b"[]\n", b"")),
    "jsonlines bare numbers": (JSONL, _repeated(b"", b"1\n", b"")),
    "libsvm one-digit pairs": (LIBSVM, _repeated(b"", b"0:1 1:1 2:1\n", b"")),
    "libsvm labels only": (LIBSVM, _repeated(b"", b"1 0:1\n", b"")),
    "recordio one-value records": (RECORDIO, _records),
    "recordio sparse one-key records": (RECORDIO, _sparse_records),
    "recordio empty records": (RECORDIO, _empty_records),
    "parquet constant zstd": (PARQUET, lambda n: _columnar("parquet", n // 20)),
    "arrow constant zstd": (
        "application/vnd.apache.arrow.stream",
        lambda n: _columnar("arrow", n // 20),
    ),
}


def measure(name: str, size: int) -> dict[str, float]:
    """Decode one case here; the body is built before the peak is reset."""
    media_type, build = CASES[name]
    body = build(size)
    charged = [0]
    check = budget_module.RequestBudget.check

    def recording(self: budget_module.RequestBudget, needed: int, what: str) -> None:
        charged[0] = max(charged[0], needed)
        check(self, needed, what)

    def pieces_recording(
        self: budget_module.RequestBudget,
        body: bytes,
        per_byte: int,
        per_piece: int,
        separators: bytes,
        media_type: str,
    ) -> None:
        """``check_pieces`` calls ``check`` only near the limit: record its exact count."""
        pieces = 1 + sum(map(body.count, separators))
        charged[0] = max(charged[0], per_byte * len(body) + per_piece * pieces)
        check_pieces(self, body, per_byte, per_piece, separators, media_type)

    check_pieces = budget_module.RequestBudget.check_pieces
    budget_module.RequestBudget.check = recording  # type: ignore[method-assign]
    budget_module.RequestBudget.check_pieces = pieces_recording  # type: ignore[method-assign]
    settings = Settings(request_memory_bytes=1 << 40, request_memory_ratio=1 << 20)
    decoder, media = default_registry(settings).decoder_for(media_type, media_type)
    context = DecodeContext(budget=budget_module.MemoryBudget.of(settings))
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    with contextlib.suppress(ClientError):  # a refused body costs what it cost until then
        decoder.decode(body, MediaType(media.essence, media.params), context)
    peak = _status("VmHWM") - before
    return {"body": len(body), "charged": charged[0], "peak": peak}


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0, help="body size per case")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = int(args.mb * MB)
    if args.case:
        print(json.dumps(measure(args.case, size)))
        return
    print(f"{'case':32s} {'body':>9s} {'charged':>10s} {'peak':>10s}  peak/body  peak/charged")
    for name in CASES:
        done = subprocess.run([sys.executable, __file__, "--mb", str(args.mb), "--case", name],
                              capture_output=True, text=True, check=True)  # fmt: skip
        row = json.loads(done.stdout)
        print(
            f"{name:32s} {row['body'] / MB:7.2f}MB {row['charged'] / MB:8.1f}MB "
            f"{row['peak'] / MB:8.1f}MB  {row['peak'] / row['body']:8.1f}x  "
            f"{row['peak'] / max(row['charged'], 1):8.2f}"
        )


if __name__ == "__main__":
    main()
