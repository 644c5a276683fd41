"""Writing UBJSON, the form XGBoost reads fastest and exactly: numeric arrays go out as typed,
counted arrays of big-endian values (``[$d#L<n>`` then the payload), written from numpy in one
step, so float32 values stay the same bits. Markers as XGBoost's own writer uses them: keys and
strings with an int64 length, integers as int64, floats as float32.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

# numpy dtype (little or native endian) -> UBJSON marker and big-endian dtype
_TYPED = {
    np.dtype(np.float32): (b"d", ">f4"),
    np.dtype(np.int32): (b"l", ">i4"),
    np.dtype(np.int64): (b"L", ">i8"),
    np.dtype(np.uint8): (b"U", "u1"),
}


def encode(value: Any) -> bytes:
    """``value`` (dicts with str keys, lists, str, int, float, bool, numpy arrays of the
    dtypes in ``_TYPED``) as one UBJSON document."""
    parts: list[bytes] = []
    _write(value, parts)
    return b"".join(parts)


def _write(value: Any, parts: list[bytes]) -> None:
    if isinstance(value, np.ndarray):
        parts.extend(_typed(value))
    elif isinstance(value, Mapping):
        _write_object(value, parts)
    elif isinstance(value, str):
        parts.append(b"S" + _key(value))
    elif isinstance(value, bool):
        parts.append(b"T" if value else b"F")
    elif isinstance(value, int):
        parts.append(b"L" + struct.pack(">q", value))
    elif isinstance(value, float | np.floating):
        parts.append(b"d" + struct.pack(">f", value))
    elif isinstance(value, Sequence):
        _write_array(value, parts)
    else:
        raise TypeError(f"cannot write {type(value).__name__} as UBJSON")


def _write_object(value: Mapping[str, Any], parts: list[bytes]) -> None:
    parts.append(b"{")
    for key, item in value.items():
        parts.append(_key(key))
        _write(item, parts)
    parts.append(b"}")


def _write_array(value: Sequence[Any], parts: list[bytes]) -> None:
    parts.append(b"[#L" + struct.pack(">q", len(value)))
    for item in value:
        _write(item, parts)


@lru_cache(maxsize=256)
def _key(text: str) -> bytes:
    raw = text.encode()
    return b"L" + struct.pack(">q", len(raw)) + raw


def _typed(array: np.ndarray) -> tuple[bytes, bytes]:
    marker, big_endian = _TYPED[array.dtype.newbyteorder("=")]
    header = b"[$" + marker + b"#L" + struct.pack(">q", array.size)
    return header, np.ascontiguousarray(array, dtype=big_endian).tobytes()
