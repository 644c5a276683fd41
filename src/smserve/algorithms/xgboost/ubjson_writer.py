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
    dtypes in ``_TYPED``, callables returning one of these) as one UBJSON document: the
    pieces, then one join (the document's size twice at most)."""
    out: list[bytes] = []
    _write(value, out)
    return b"".join(out)


def _write(value: Any, out: list[bytes]) -> None:
    if isinstance(value, np.ndarray):
        _write_typed(value, out)
    elif isinstance(value, Mapping):
        _write_object(value, out)
    elif isinstance(value, str):
        out.append(b"S" + _key(value))
    elif isinstance(value, bool):
        out.append(b"T" if value else b"F")
    elif isinstance(value, int):
        out.append(b"L" + struct.pack(">q", value))
    elif isinstance(value, float | np.floating):
        out.append(b"d" + struct.pack(">f", value))
    elif isinstance(value, Sequence):
        _write_array(value, out)
    elif callable(value):  # a value made only when written (a converted tree)
        _write(value(), out)
    else:
        raise TypeError(f"cannot write {type(value).__name__} as UBJSON")


def _write_object(value: Mapping[str, Any], out: list[bytes]) -> None:
    out.append(b"{")
    for key, item in value.items():
        out.append(_key(key))
        _write(item, out)
    out.append(b"}")


def _write_array(value: Sequence[Any], out: list[bytes]) -> None:
    out.append(b"[#L" + struct.pack(">q", len(value)))
    for item in value:
        _write(item, out)


@lru_cache(maxsize=256)
def _key(text: str) -> bytes:
    raw = text.encode()
    return b"L" + struct.pack(">q", len(raw)) + raw


def _write_typed(array: np.ndarray, out: list[bytes]) -> None:
    marker, big_endian = _TYPED[array.dtype.newbyteorder("=")]
    out.append(b"[$" + marker + b"#L" + struct.pack(">q", array.size))
    out.append(np.ascontiguousarray(array, dtype=big_endian).tobytes())
