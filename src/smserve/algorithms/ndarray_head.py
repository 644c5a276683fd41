"""What an MXNet NDArray list file holds (how many arrays, their shapes and dtypes, their
names), read from its headers alone: a bounded number of small reads, each array's data
skipped with a seek, so a hostile or huge file costs at most a few kilobytes of reading.

The layout is ``smserve.algorithms.ndarray``'s; this module imports no numpy (the table of
algorithms reads it before numpy may be imported). A stream cut short, or an array this
reader cannot step over (sparse storage, an unknown dtype), ends the description early:
``complete`` says whether every array and name was read.
"""

from __future__ import annotations

import io
import math
import struct
from dataclasses import dataclass
from typing import BinaryIO

LIST_MAGIC = struct.pack("<Q", 0x112)
LIST_HEADER_BYTES = 24  # u64 magic, u64 reserved, u64 array count
MAX_ARRAYS = 64  # described at most; a file with more is described by its count alone
MAX_NAME_BYTES = 256
MAX_NDIM = 32
_SHAPED = (0xF993FAC8, 0xF993FAC9, 0xF993FACA)  # V1, V2, V3
_ITEM_SIZES = {0: 4, 1: 8, 2: 2, 3: 1, 4: 4, 5: 1, 6: 8}
DTYPE_NAMES = dict(enumerate(("float32", "float64", "float16", "uint8", "int32", "int8", "int64")))


@dataclass(frozen=True, slots=True)
class ArrayHead:
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, slots=True)
class ListHead:
    """``count`` arrays, of which ``arrays`` were described (in file order) and ``names``
    (empty for an unnamed list) read."""

    count: int
    arrays: tuple[ArrayHead, ...]
    names: tuple[str, ...]
    complete: bool


def starts_like_ndarray(head: bytes) -> bool:
    """Whether ``head`` begins with the list magic, or is a (possibly empty) prefix of it."""
    return head[:8] == LIST_MAGIC[: len(head[:8])]


def read_head(head: bytes) -> ListHead | None:
    """The description of a file whose first bytes are ``head``; None when it does not start
    with the list magic or is cut before the array count."""
    return read_list_head(io.BytesIO(head))


def read_list_head(stream: BinaryIO) -> ListHead | None:
    """The description of the NDArray list file ``stream`` is at the start of (see the module
    doc); None when it is not one or ends before the array count."""
    header = stream.read(LIST_HEADER_BYTES)
    if len(header) < LIST_HEADER_BYTES or header[:8] != LIST_MAGIC:
        return None
    count = struct.unpack_from("<Q", header, 16)[0]
    arrays = _arrays(stream, min(count, MAX_ARRAYS))
    described = len(arrays) == count
    names = _names(stream, count) if described else None
    return ListHead(count, tuple(arrays), names or (), described and names is not None)


def _arrays(stream: BinaryIO, count: int) -> list[ArrayHead]:
    arrays: list[ArrayHead] = []
    for _ in range(count):
        array = _array(stream)
        if array is None:
            break
        arrays.append(array)
    return arrays


def _array(stream: BinaryIO) -> ArrayHead | None:
    """One array's header, its data skipped; None when cut short or not steppable."""
    shape = _shape(stream)
    context_and_flag = stream.read(12)
    if shape is None or len(context_and_flag) < 12:
        return None
    flag = struct.unpack_from("<i", context_and_flag, 8)[0]
    if flag not in _ITEM_SIZES or any(d < 0 for d in shape):
        return None
    end = stream.tell() + math.prod(shape) * _ITEM_SIZES[flag]
    if stream.seek(0, io.SEEK_END) < end:
        return None
    stream.seek(end)
    return ArrayHead(shape, DTYPE_NAMES[flag])


def _shape(stream: BinaryIO) -> tuple[int, ...] | None:
    magic = _unpack(stream, "<I")
    if magic is None:
        return None
    if magic not in _SHAPED:  # legacy: the word is ndim, u32 dims follow
        return _unpack_all(stream, f"<{magic}I") if magic <= MAX_NDIM else None
    if magic != _SHAPED[0] and _unpack(stream, "<i") != 0:  # V2/V3: storage type, 0 = dense
        return None
    ndim = _unpack(stream, "<i")
    if ndim is None or not 0 < ndim <= MAX_NDIM:
        return None
    return _unpack_all(stream, f"<{ndim}q")


def _names(stream: BinaryIO, count: int) -> tuple[str, ...] | None:
    """The names after the data: () for none, None when cut short or malformed."""
    listed = _unpack(stream, "<Q")
    if listed is None or listed not in (0, count):
        return None
    names = []
    for _ in range(listed):
        size = _unpack(stream, "<Q")
        if size is None or size > MAX_NAME_BYTES:
            return None
        name = stream.read(size)
        if len(name) < size:
            return None
        names.append(name.decode("utf-8", "replace"))
    return tuple(names)


def _unpack(stream: BinaryIO, fmt: str) -> int | None:
    values = _unpack_all(stream, fmt)
    return None if values is None else values[0]


def _unpack_all(stream: BinaryIO, fmt: str) -> tuple[int, ...] | None:
    size = struct.calcsize(fmt)
    data = stream.read(size)
    return struct.unpack(fmt, data) if len(data) == size else None
