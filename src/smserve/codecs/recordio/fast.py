"""The vectorised RecordIO reader for bodies of canonical dense rows (what the SDK writes).

``RecordSerializer`` and ``write_numpy_to_dense_tensor`` write every row of an (n_rows, n)
float32 or float64 array as the same bytes except for the values: frame header, then
``features{"values": tensor{values: [n packed floats]}}`` and, with labels, a scalar
``label{"values": ...}``. When the first frame has exactly that layout and the body is a
whole number of equal frames, one structured numpy dtype views all rows at once; the fixed
bytes of every row are compared in one vectorised test and the values are copied out. Only
the first record is parsed (by protobuf), to learn n and the tensor types to expect. Any
difference (another layout, a multi-part record, a single odd frame) answers None and the
caller uses the general per-record reader, which gives the same result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from google.protobuf.message import DecodeError as ProtobufDecodeError

from smserve.codecs.recordio.framing import (
    COMPLETE,
    HEADER,
    MAGIC,
    frame_dtype,
    padding,
    read_frame,
)
from smserve.codecs.recordio.records import FEATURE_KEY
from smserve.codecs.recordio.schema import FEATURES_TAG, LABEL_TAG, Record, entry_head
from smserve.errors import DecodeError
from smserve.types import FloatArray

_TENSORS = {4: "float32_tensor", 8: "float64_tensor"}
_ITEM_SIZES = {kind: size for size, kind in _TENSORS.items()}
_ITEM_TYPES = {4: "<f4", 8: "<f8"}


@dataclass(frozen=True, slots=True)
class Layout:
    """The fixed bytes and value positions of one canonical dense row frame."""

    n: int  # feature values per row
    item_size: int  # 4 (float32_tensor) or 8 (float64_tensor)
    head: bytes  # frame header and record bytes up to the first feature value
    label_size: int  # 0 (no label), 4 or 8
    label_head: bytes  # record bytes between the last feature value and the label value

    @property
    def payload_length(self) -> int:
        tail = len(self.label_head) + self.label_size
        return len(self.head) - HEADER.size + self.item_size * self.n + tail

    @property
    def frame_size(self) -> int:
        return HEADER.size + self.payload_length + padding(self.payload_length)

    def dtype(self) -> np.dtype[np.void]:
        values_at = len(self.head)
        fields: list[tuple[str, Any, int]] = [
            ("head", (np.uint8, values_at), 0),
            ("values", (_ITEM_TYPES[self.item_size], self.n), values_at),
        ]
        if self.label_size:
            label_head_at = values_at + self.item_size * self.n
            label_at = label_head_at + len(self.label_head)
            fields.append(("label_head", (np.uint8, len(self.label_head)), label_head_at))
            fields.append(("label", _ITEM_TYPES[self.label_size], label_at))
        return frame_dtype(fields, self.frame_size)


def _entry_head(map_tag: int, item_size: int, n: int) -> bytes:
    return entry_head(map_tag, FEATURE_KEY, _TENSORS[item_size], item_size, n)


def _layout(item_size: int, n: int, label_size: int) -> Layout:
    features = _entry_head(FEATURES_TAG, item_size, n)
    label_head = _entry_head(LABEL_TAG, label_size, 1) if label_size else b""
    length = len(features) + item_size * n + len(label_head) + label_size
    return Layout(n, item_size, HEADER.pack(MAGIC, length) + features, label_size, label_head)


def _tensor_shape(value: Any) -> tuple[int, int] | None:
    """(item size, value count) of a float32/float64 Value without keys or shape."""
    kind = value.WhichOneof("value")
    if kind not in _ITEM_SIZES:
        return None
    tensor = getattr(value, kind)
    if len(tensor.keys) or len(tensor.shape):
        return None
    return _ITEM_SIZES[kind], len(tensor.values)


def _guess(payload: bytes) -> Layout | None:
    """The canonical layout the first payload would have (its bytes are compared later)."""
    try:
        record = Record.FromString(payload)
    except ProtobufDecodeError:
        return None
    values, label = record.features.get(FEATURE_KEY), record.label.get(FEATURE_KEY)
    features = None if values is None else _tensor_shape(values)
    labels = (0, 1) if label is None else _tensor_shape(label)
    if features is None or labels is None or labels[1] != 1 or features[1] == 0:
        return None
    return _layout(features[0], features[1], labels[0])


def _first_layout(body: bytes) -> Layout | None:
    try:
        first = read_frame(body, 0)
    except DecodeError:
        return None  # the general reader reports it
    layout = _guess(first.payload) if first.flag == COMPLETE else None
    if layout is None or layout.payload_length != len(first.payload):
        return None
    return layout


def _frames(body: bytes) -> tuple[Layout, npt.NDArray[np.void]] | None:
    layout = _first_layout(body)
    if layout is None or len(body) % layout.frame_size:
        return None
    frames = np.frombuffer(body, dtype=layout.dtype())
    head = np.frombuffer(layout.head, dtype=np.uint8)
    if not np.array_equal(frames["head"], np.broadcast_to(head, frames["head"].shape)):
        return None
    if layout.label_size and not _same_label_heads(frames, layout):
        return None
    return layout, frames


def _same_label_heads(frames: npt.NDArray[np.void], layout: Layout) -> bool:
    expected = np.frombuffer(layout.label_head, dtype=np.uint8)
    return bool((frames["label_head"] == expected).all())


def _to_float32(values: npt.NDArray[np.floating]) -> FloatArray:
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32 -> inf; NaN stays NaN
        return np.array(values, dtype=np.float32, order="C")


def decode_dense(body: bytes) -> tuple[FloatArray, FloatArray | None] | None:
    """Features (n_rows, n) and scalar labels (n_rows,) or None, of a body of canonical dense
    rows; None when the body has any other layout."""
    found = _frames(body)
    if found is None:
        return None
    layout, frames = found
    labels = _to_float32(frames["label"]) if layout.label_size else None
    return _to_float32(frames["values"]), labels
