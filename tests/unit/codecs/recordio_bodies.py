"""Test-side writers for RecordIO-protobuf bodies, independent of the codec's own framing."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from smserve.codecs.recordio.schema import Record

MAGIC = 0xCED7230A


def frame_bytes(payload: bytes, flag: int = 0, magic: int = MAGIC) -> bytes:
    """One frame: LE magic, LE (flag << 29 | length), payload, zero padding to 4 bytes."""
    header = struct.pack("<II", magic, flag << 29 | len(payload))
    return header + payload + bytes(-len(payload) % 4)


def body_of(payloads: Iterable[bytes]) -> bytes:
    return b"".join(frame_bytes(payload) for payload in payloads)


def record(
    values: Sequence[float] = (),
    *,
    kind: str = "float32_tensor",
    keys: Sequence[int] | None = None,
    shape: Sequence[int] | None = None,
    key: str = "values",
    label: Sequence[float] | None = None,
) -> bytes:
    """One serialized Record with ``features[key]`` set (and ``label["values"]`` if given)."""
    message = Record()
    tensor = getattr(message.features[key], kind)
    tensor.values.extend(values)
    tensor.keys.extend(keys or ())
    tensor.shape.extend(shape or ())
    if label is not None:
        message.label["values"].float32_tensor.values.extend(label)
    return bytes(message.SerializeToString())


def dense_body(rows: Sequence[Sequence[float]], kind: str = "float32_tensor") -> bytes:
    return body_of(record(row, kind=kind) for row in rows)
