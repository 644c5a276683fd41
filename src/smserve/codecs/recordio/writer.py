"""The vectorised RecordIO-protobuf response writer: one Record per prediction row.

Each Record has empty features and one ``label`` entry per output holding a float32_tensor
(1 value for a scalar output, k for an (n_rows, k) output; NaN stays NaN). Every row's frame
has the same length and the same bytes apart from the values, so all frames are laid out in
one structured numpy array and written with a single ``tobytes``: flag 0, zero padding.

Entries are sorted by name in plain lexicographic order, which is protobuf's deterministic
map order in its C++ and pure-Python runtimes, so the payload equals
``Record.SerializeToString(deterministic=True)`` there. The upb runtime orders a key before
its own prefixes ("raw_scores" before "raw_score"); only then do its bytes differ, in entry
order alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from smserve.codecs.recordio.framing import HEADER, LENGTH_MASK, MAGIC, frame_dtype, padding
from smserve.codecs.recordio.schema import LABEL_TAG, entry_head
from smserve.errors import NotAcceptable
from smserve.media import RECORDIO
from smserve.types import FloatArray, Prediction

_NUMERIC_KINDS = "biuf"


@dataclass(frozen=True, slots=True)
class _Column:
    """One output: its fixed entry bytes and its (n_rows, k) float32 values."""

    head: bytes
    values: FloatArray

    @property
    def size(self) -> int:
        return len(self.head) + 4 * int(self.values.shape[1])


def _columns(prediction: Prediction) -> list[_Column]:
    columns = []
    for name, array in sorted(prediction.items()):
        if array.dtype.kind not in _NUMERIC_KINDS:
            raise NotAcceptable(
                f"output {name!r} holds {array.dtype} values; {RECORDIO} carries only numbers"
            )
        k = math.prod(array.shape[1:])  # 1 for a scalar output, also when there are no rows
        values = array.reshape(len(array), k).astype(np.float32)
        head = entry_head(LABEL_TAG, name, "float32_tensor", 4, values.shape[1])
        columns.append(_Column(head, values))
    return columns


def _frame_dtype(columns: list[_Column], length: int) -> np.dtype[np.void]:
    fields: list[tuple[str, Any, int]] = [("magic", "<u4", 0), ("length", "<u4", 4)]
    at = HEADER.size
    for index, column in enumerate(columns):
        fields.append((f"head{index}", (np.uint8, len(column.head)), at))
        fields.append((f"values{index}", ("<f4", column.values.shape[1]), at + len(column.head)))
        at += column.size
    return frame_dtype(fields, HEADER.size + length + padding(length))


def encode_prediction(prediction: Prediction) -> bytes:
    """One flag-0 RecordIO frame per row of ``prediction``, concatenated.

    Raises NotAcceptable when an output is not numeric.
    """
    columns = _columns(prediction)
    length = sum(column.size for column in columns)
    if length > LENGTH_MASK:
        raise ValueError(f"a RecordIO payload holds at most {LENGTH_MASK} bytes")
    frames = np.zeros(prediction.n_rows, dtype=_frame_dtype(columns, length))
    frames["magic"], frames["length"] = MAGIC, length
    for index, column in enumerate(columns):
        frames[f"head{index}"] = np.frombuffer(column.head, dtype=np.uint8)
        frames[f"values{index}"] = column.values
    return frames.tobytes()
