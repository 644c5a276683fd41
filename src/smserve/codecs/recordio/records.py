"""The general RecordIO-protobuf reader: one ``aialgs.data.Record`` parsed per payload.

Features come from ``features["values"]`` or, when that key is absent, the only key present.
A float32, float64 or int32 tensor is either dense (``values`` only, optionally with
``shape=[len(values)]``) or sparse (``keys`` and ``shape=[D]``; an empty sparse row carries
only the shape). Dense rows give a float32 ndarray; any sparse row makes the whole body a
float32 CSR matrix, with dense rows stored in full. Labels, uid, metadata and configuration
are ignored, except that ``read_records`` returns scalar ``label["values"]`` entries. Values
beyond the float32 range become infinities; NaN is kept (a missing value).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from google.protobuf.message import DecodeError as ProtobufDecodeError

from smserve.budget import UNLIMITED, RequestBudget
from smserve.codecs.recordio.framing import Payload, read_payloads
from smserve.codecs.recordio.schema import Record
from smserve.errors import DecodeError
from smserve.scipy_sparse import sparse as sp
from smserve.types import Features, FloatArray

FEATURE_KEY = "values"
NUMERIC_TENSORS = ("float32_tensor", "float64_tensor", "int32_tensor")
MAX_WIDTH = 2**31 - 1  # a feature index must fit scipy's int32 CSR indices
# What parsing costs (bench/inprocess/decode_memory.py): about 900 bytes per record (its
# message, map entry and tensor, and the row made of it), and per body byte what its fields
# become.
RECORD_BYTES = 900
FRAMED_BYTES_PER_BYTE = 32


class Row(NamedTuple):
    """One record's features; ``keys`` is None for a dense row."""

    values: Sequence[float]  # the tensor's repeated field; copied out once for all rows
    keys: npt.NDArray[np.int64] | None
    width: int


class Located(NamedTuple):
    """A parsed record with its position in the body, for error messages."""

    position: int  # the record's 0-based index in the body (messages say position + 1)
    offset: int
    record: Any

    def error(self, problem: str) -> DecodeError:
        where = f"record {self.position + 1} (byte offset {self.offset})"
        return DecodeError(f"RecordIO: {where}: {problem}")


def decode_general(
    body: bytes, budget: RequestBudget = UNLIMITED
) -> tuple[Features, FloatArray | None]:
    """Features and scalar labels (None unless every record has one) of a RecordIO body;
    its records are charged to ``budget`` once framed, before any is parsed."""
    records = parse_records(body, budget)
    if not records:
        raise DecodeError("RecordIO: the body holds no records")
    rows = [row_of(located) for located in records]
    return assemble(rows, records), labels_of(records)


def parse_records(body: bytes, budget: RequestBudget = UNLIMITED) -> list[Located]:
    """Every Record of ``body``; raises DecodeError for a payload that is not a Record."""
    payloads = read_payloads(body)
    needed = FRAMED_BYTES_PER_BYTE * len(body) + RECORD_BYTES * len(payloads)
    budget.check(needed, f"RecordIO: {len(payloads)} records")
    return [
        Located(index, payload.offset, _parse(payload)) for index, payload in enumerate(payloads)
    ]


def _parse(payload: Payload) -> Any:
    for candidate in payload.candidates():
        try:
            return Record.FromString(candidate)
        except ProtobufDecodeError:
            continue
    raise DecodeError(
        f"RecordIO: the frame at byte offset {payload.offset} does not hold an "
        "aialgs.data.Record protobuf message"
    )


def _feature_value(located: Located) -> Any:
    features = located.record.features
    value = features.get(FEATURE_KEY)
    if value is not None:
        return value
    keys = sorted(features)
    if len(keys) == 1:
        return features[keys[0]]
    if not keys:
        raise located.error("it has no features")
    raise located.error(
        f"it has features {keys} but none named {FEATURE_KEY!r}; "
        f"send one feature tensor, preferably under {FEATURE_KEY!r}"
    )


def _tensor(located: Located) -> Any:
    value = _feature_value(located)
    kind = value.WhichOneof("value")
    if kind not in NUMERIC_TENSORS:
        raise located.error(
            f"the feature tensor is {kind or 'empty'}; use float32_tensor, float64_tensor "
            "or int32_tensor"
        )
    return getattr(value, kind)


def row_of(located: Located) -> Row:
    """The features of one record as a dense or sparse row; raises DecodeError."""
    try:
        tensor = _tensor(located)
    except UnicodeDecodeError:  # proto2 parsing leaves map keys unchecked until read
        raise located.error("a feature key is not valid UTF-8") from None
    values, keys, shape = tensor.values, tensor.keys, tensor.shape
    if len(shape) > 1:
        raise located.error(f"shape {list(shape)} is not a row; use shape=[feature_dim]")
    if len(shape) and shape[0] > MAX_WIDTH:
        raise located.error(f"shape [{shape[0]}] exceeds {MAX_WIDTH} features")
    if len(keys):
        return _sparse_row(located, values, keys, shape)
    if len(shape) and len(values) not in (0, shape[0]):
        raise located.error(f"a dense tensor has {len(values)} values but shape {list(shape)}")
    if len(shape) and not len(values):
        return Row(values, np.zeros(0, dtype=np.int64), int(shape[0]))
    return Row(values, None, len(values))


def _sparse_row(
    located: Located, values: Sequence[float], keys: Sequence[int], shape: Sequence[int]
) -> Row:
    if not len(shape):
        raise located.error("a sparse tensor (with keys) needs shape=[feature_dim]")
    if len(keys) != len(values):
        raise located.error(f"a sparse tensor has {len(keys)} keys but {len(values)} values")
    width, indices = int(shape[0]), np.fromiter(keys, dtype=np.uint64, count=len(keys))
    if int(indices.max()) >= width:
        raise located.error(f"key {int(indices.max())} is out of range for shape [{width}]")
    if np.any(indices[1:] <= indices[:-1]):
        raise located.error("sparse keys must be strictly increasing (sorted, no duplicates)")
    return Row(values, indices.astype(np.int64), width)


def assemble(rows: Sequence[Row], records: Sequence[Located]) -> Features:
    """A float32 2-D ndarray when every row is dense, else a float32 CSR matrix."""
    width = _common_width(rows, records)
    counts = np.fromiter((len(row.values) for row in rows), dtype=np.int64, count=len(rows))
    flat = chain.from_iterable(row.values for row in rows)
    values = _to_float32(np.fromiter(flat, dtype=np.float64, count=int(counts.sum())))
    if all(row.keys is None for row in rows):
        return values.reshape(len(rows), width)
    indices = np.concatenate([_indices(row) for row in rows]).astype(np.int32)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((values, indices, indptr), shape=(len(rows), width))


def _indices(row: Row) -> npt.NDArray[np.int64]:
    return np.arange(row.width, dtype=np.int64) if row.keys is None else row.keys


def _common_width(rows: Sequence[Row], records: Sequence[Located]) -> int:
    widths = np.array([row.width for row in rows], dtype=np.int64)
    odd = np.flatnonzero(widths != widths[0])
    if odd.size:
        first = int(odd[0])
        raise records[first].error(
            f"it has {widths[first]} features but record 1 has {widths[0]}; "
            "every record must have the same number of features"
        )
    return int(widths[0])


def _to_float32(values: npt.NDArray[np.float64]) -> FloatArray:
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32 -> inf; NaN stays NaN
        return values.astype(np.float32)


def labels_of(records: Sequence[Located]) -> FloatArray | None:
    """``label["values"]`` of every record as float32, or None if any is absent or not scalar."""
    labels = [_scalar_label(located.record) for located in records]
    if any(label is None for label in labels):
        return None
    return _to_float32(np.array(labels, dtype=np.float64))


def _scalar_label(record: Any) -> float | None:
    value = record.label.get(FEATURE_KEY)
    kind = None if value is None else value.WhichOneof("value")
    if kind not in NUMERIC_TENSORS:
        return None
    tensor = getattr(value, kind)
    if len(tensor.values) != 1 or len(tensor.keys):
        return None
    return float(tensor.values[0])
