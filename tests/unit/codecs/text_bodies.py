"""Test-side writers for the text formats and hypothesis strategies for matrices to write.

Deliberately naive (per-row Python), so they are an independent reference for the codecs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import scipy.sparse as sp
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from smserve.errors import ClientError
from smserve.types import Batch


def number(value: float, style: str) -> str:
    """``value`` (a float32) as ``repr`` of its float64 or as numpy's shortest float32 text."""
    return repr(float(value)) if style == "repr" else str(np.float32(value))


def csv_body(
    matrix: np.ndarray, style: str = "repr", empty_nan: bool = True, eol: str = "\n"
) -> bytes:
    """Rows of ``matrix``; NaN as an empty field (when ``empty_nan``) or as ``nan``."""
    lines = [
        ",".join("" if empty_nan and v != v else number(v, style) for v in row)
        for row in matrix.tolist()
    ]
    return eol.join(lines).encode()


def libsvm_body(matrix: sp.csr_matrix, base: int, labels: bool = True) -> bytes:
    """One line per row: a label (always, on a row with no entries, or it would be a blank
    line) then ``index:value`` for every stored entry."""
    lines = []
    for row in range(matrix.shape[0]):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        pairs = [
            f"{column + base}:{number(value, 'repr')}"
            for column, value in zip(matrix.indices[start:end], matrix.data[start:end], strict=True)
        ]
        lines.append(" ".join(([f"{row % 2}"] if labels or not pairs else []) + pairs))
    return "\n".join(lines).encode()


def json_instance(row: list[float | None], form: int) -> Any:
    """``row`` in one of the four dense instance forms."""
    return [
        row,
        {"features": row},
        {"data": {"features": row}},
        {"data": {"features": {"values": row}}, "configuration": {}},
    ][form]


def sparse_instance(matrix: sp.csr_matrix, row: int) -> dict[str, Any]:
    start, end = matrix.indptr[row], matrix.indptr[row + 1]
    features = {
        "keys": matrix.indices[start:end].tolist(),
        "shape": [matrix.shape[1]],
        "values": [float(v) for v in matrix.data[start:end]],
    }
    return {"data": {"features": features}}


def dense_rows(matrix: np.ndarray) -> list[list[float | None]]:
    """Rows as JSON-ready lists: float32 promoted to float, NaN as None."""
    return [[None if v != v else float(v) for v in row] for row in matrix.tolist()]


def json_lines(values: list[Any]) -> bytes:
    return b"\n".join(orjson.dumps(value) for value in values)


def float32s(nan: bool = True, infinity: bool = True) -> st.SearchStrategy[float]:
    return st.floats(width=32, allow_nan=nan, allow_infinity=infinity)


def matrices(
    max_rows: int = 6, max_columns: int = 6, nan: bool = True, infinity: bool = True
) -> st.SearchStrategy[np.ndarray]:
    shapes = st.tuples(st.integers(1, max_rows), st.integers(1, max_columns))
    return hnp.arrays(np.float32, shapes, elements=float32s(nan, infinity))


@st.composite
def sparse_matrices(
    draw: st.DrawFn, max_rows: int = 6, max_columns: int = 12, infinity: bool = True
) -> sp.csr_matrix:
    """A float32 CSR with sorted indices and at least one stored entry (NaN-free)."""
    dense = draw(matrices(max_rows, max_columns, nan=False, infinity=infinity))
    mask = draw(hnp.arrays(bool, dense.shape))
    mask.flat[draw(st.integers(0, dense.size - 1))] = True
    rows, columns = np.nonzero(mask)
    return sp.csr_matrix((dense[mask], (rows, columns)), shape=dense.shape, dtype=np.float32)


def mutations(body: bytes) -> st.SearchStrategy[bytes]:
    """``body`` with a few bytes replaced, inserted or deleted."""
    interesting = st.sampled_from(list(b'\n\r\t ,:.-+e[]{}"0123456789nul\x00\xff'))
    byte = st.one_of(interesting, st.integers(0, 255))

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        data = bytearray(body)
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(data)))
            action = draw(st.sampled_from(["replace", "insert", "delete"]))
            if action == "insert" or not data:
                data[at:at] = bytes([draw(byte)])
            elif action == "replace":
                data[min(at, len(data) - 1)] = draw(byte)
            else:
                del data[min(at, len(data) - 1)]
        return bytes(data)

    return mutate()


def decode_or_client_error(decode: Any, body: bytes) -> Batch | None:
    """``decode(body)``; a ClientError is an acceptable answer, anything else fails the test."""
    try:
        batch = decode(body)
    except ClientError:
        return None
    assert isinstance(batch, Batch)
    assert batch.features.dtype == np.float32
    assert batch.features.ndim == 2
    if isinstance(batch.features, np.ndarray):
        assert batch.features.flags.c_contiguous
    else:
        assert isinstance(batch.features, sp.csr_matrix)
    return batch
