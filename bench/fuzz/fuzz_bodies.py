"""The valid bodies fuzz_requests.py starts from: every content type the server reads (CSV,
JSON, JSON Lines, libsvm, RecordIO, NumPy .npy in C and Fortran order), TF Serving's four
request forms, V2 infer bodies (JSON and Triton's binary extension), one CSV body near the
payload limit, and chunked framing."""

from __future__ import annotations

import io
import json
import random

import numpy as np

from bench.fuzz.fuzz_mutations import BODY_TYPES, CSV, JSON, JSONL, LIBSVM, NPY
from smserve.codecs.recordio.framing import frame
from smserve.codecs.recordio.schema import Record

N_FEATURES = 50


def chunked(body: bytes, sizes: list[int]) -> bytes:
    out, start = [], 0
    for size in [*sizes, len(body)]:
        piece = body[start : start + size]
        if piece:
            out.append(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        start += size
    return b"".join(out) + b"0\r\n\r\n"


class Bodies:
    """Valid bodies of each content type (1 to 50 rows), and one near the payload limit."""

    def __init__(self, limit: int, seed: int) -> None:
        self.limit = limit
        rng = np.random.default_rng(seed)
        self.valid = {
            t: [encode(t, _matrix(rng, n)) for n in (1, 2, 5, 20, 50)] for t in BODY_TYPES
        }
        self.tfs = [_tfs(_matrix(rng, n), form) for n in (1, 3) for form in range(4)]
        self.v2 = [_v2(_matrix(rng, n), binary) for n in (1, 3, 20) for binary in (False, True)]
        self.big = _csv(_matrix(rng, 1000))

    def near_limit(self, r: random.Random) -> bytes:
        """A CSV body of about the limit: a bit under, exactly at, or one byte over."""
        target = self.limit + r.choice((-len(self.big) // 2, -1, 0, 1, 4096))
        body = self.big * (target // len(self.big) + 1)
        return body[:target]


def _matrix(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.normal(size=(n, N_FEATURES)).astype(np.float32)


def _csv(matrix: np.ndarray) -> bytes:
    buffer = io.StringIO()
    np.savetxt(buffer, matrix, fmt="%.6g", delimiter=",")
    return buffer.getvalue().encode()


def encode(content_type: str, matrix: np.ndarray) -> bytes:
    rows = [[round(float(v), 5) for v in row] for row in matrix]
    if content_type == CSV:
        return _csv(matrix)
    if content_type == JSON:
        return json.dumps({"instances": rows}).encode()
    if content_type == JSONL:
        return "".join(json.dumps({"features": row}) + "\n" for row in rows).encode()
    if content_type == LIBSVM:
        return "".join(
            "0 " + " ".join(f"{i}:{v}" for i, v in enumerate(row)) + "\n" for row in rows
        ).encode()
    if content_type == NPY:
        return _npy(matrix if len(matrix) % 2 else np.asfortranarray(matrix, dtype=np.float64))
    return b"".join(frame(_record(row).SerializeToString()) for row in matrix)


def _npy(matrix: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    return buffer.getvalue()


def _record(row: np.ndarray) -> object:
    record = Record()
    record.features["values"].float32_tensor.values.extend(row.tolist())
    return record


def _tfs(matrix: np.ndarray, form: int) -> bytes:
    rows = [[round(float(v), 5) for v in row] for row in matrix]
    documents = [
        {"instances": rows},
        {"inputs": rows},
        {"signature_name": "serving_default", "instances": rows},
        {"inputs": {"inputs": rows}},
    ]
    return json.dumps(documents[form]).encode()


def _v2(matrix: np.ndarray, binary: bool) -> tuple[bytes, int | None]:
    """A V2 infer body, JSON or with the tensor in Triton's binary extension; and the JSON
    header's length (the Inference-Header-Content-Length) for a binary one."""
    tensor: dict[str, object] = {
        "name": "input__0",
        "shape": list(matrix.shape),
        "datatype": "FP32",
    }
    if not binary:
        tensor["data"] = [[round(float(v), 5) for v in row] for row in matrix]
        return json.dumps({"id": "f", "inputs": [tensor]}).encode(), None
    raw = matrix.astype("<f4").tobytes()
    tensor["parameters"] = {"binary_data_size": len(raw)}
    outputs = [{"name": "predict", "parameters": {"binary_data": True}}]
    header = json.dumps({"inputs": [tensor], "outputs": outputs}).encode()
    return header + raw, len(header)
