"""The MXNet NDArray list/dict file format (what ``mx.nd.save`` writes, e.g. k-means'
``model_algo-1``), read and written with numpy alone. Dense arrays only; no MXNet import.

Layout (all little-endian): u64 0x112 list magic, u64 reserved, u64 array count; per array a
u32 magic (V1, V2, V3, or a legacy ndim), its storage type (V2/V3), shape, 8 context bytes, an
i32 dtype flag and the row-major data; then u64 name count and (u64 length, bytes) names.
"""

from __future__ import annotations

import contextlib
import math
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from smserve.algorithms.confinement import read_bytes
from smserve.errors import ModelLoadError

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8  # shape follows directly (no storage type)
V2_MAGIC = 0xF993FAC9  # storage type, then shape
V3_MAGIC = 0xF993FACA  # as V2, written under numpy shape semantics
DENSE = 0
MAX_NDIM = 32  # MXNet's own limit is lower; anything above is not a shape
CPU_CONTEXT = (1, 0)  # (dev_type cpu, dev_id 0); ignored when reading

DTYPES: dict[int, np.dtype[np.generic]] = {
    0: np.dtype("<f4"),
    1: np.dtype("<f8"),
    2: np.dtype("<f2"),
    3: np.dtype("u1"),
    4: np.dtype("<i4"),
    5: np.dtype("i1"),
    6: np.dtype("<i8"),
}
STORAGE_NAMES = {1: "row_sparse", 2: "csr"}


class _Truncated(Exception):
    """The file ended inside a field."""


class _Cursor:
    """Sequential little-endian reads over the file's bytes."""

    def __init__(self, buffer: bytes) -> None:
        self.buffer = buffer
        self.offset = 0

    def take(self, size: int) -> int:
        start = self.offset
        if size < 0 or start + size > len(self.buffer):
            raise _Truncated
        self.offset += size
        return start

    def unpack(self, fmt: str) -> tuple[int, ...]:
        start = self.take(struct.calcsize(fmt))
        return struct.unpack_from(fmt, self.buffer, start)

    def scalar(self, fmt: str) -> int:
        return self.unpack(fmt)[0]

    def array(self, dtype: np.dtype[np.generic], count: int) -> np.ndarray:
        start = self.take(count * dtype.itemsize)
        return np.frombuffer(self.buffer, dtype, count, start)


class _FormatError(Exception):
    """The bytes are not a dense NDArray file; the message says why."""


def read_ndarray_file(path: Path | str) -> np.ndarray:
    """The single array stored in the NDArray file at ``path`` (list or one-entry dict).

    Returns a writable array with the stored shape and dtype. Raises ModelLoadError naming the
    file when it is not such a file, holds other than one array, is sparse, or has extra bytes.
    """
    path = Path(path)
    with _load_errors(path):
        return _parse(read_bytes(path))


@contextlib.contextmanager
def _load_errors(path: Path) -> Iterator[None]:
    """An unreadable, truncated or malformed file as a ModelLoadError naming ``path``."""
    try:
        yield
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except _Truncated:
        raise ModelLoadError(f"{path}: MXNet NDArray file is truncated") from None
    except _FormatError as exc:
        raise ModelLoadError(f"{path}: {exc}") from None


def _parse(buffer: bytes) -> np.ndarray:
    cursor = _Cursor(buffer)
    header, _reserved, count = cursor.unpack("<QQQ")
    if header != LIST_MAGIC:
        raise _FormatError(f"not an MXNet NDArray file (header 0x{header:x}, expected 0x112)")
    if count != 1:
        raise _FormatError(f"holds {count} arrays, expected exactly one")
    array = _read_array(cursor)
    _read_names(cursor, count)
    if cursor.offset != len(buffer):
        raise _FormatError(f"has {len(buffer) - cursor.offset} unexpected bytes after the data")
    return array.copy()


def _read_array(cursor: _Cursor) -> np.ndarray:
    magic = cursor.scalar("<I")
    shape = _read_shape(cursor, magic)
    if not shape:
        raise _FormatError("holds a shapeless (0-d or unknown-shape) array")
    cursor.take(8)  # context: (dev_type, dev_id), irrelevant once on the host
    flag = cursor.scalar("<i")
    dtype = DTYPES.get(flag)
    if dtype is None:
        raise _FormatError(f"has unknown dtype flag {flag}")
    if any(d < 0 for d in shape):
        raise _FormatError(f"has a negative dimension in shape {shape}")
    return cursor.array(dtype, math.prod(shape)).reshape(shape)


def _read_shape(cursor: _Cursor, magic: int) -> tuple[int, ...]:
    if magic in (V2_MAGIC, V3_MAGIC):
        _check_dense(cursor.scalar("<i"))
    elif magic != V1_MAGIC:
        # Legacy files have no magic: the first word is ndim, then u32 dims.
        if magic > MAX_NDIM:
            raise _FormatError(f"has unknown array magic 0x{magic:08x}")
        return cursor.unpack(f"<{magic}I")
    ndim = cursor.scalar("<i")
    if ndim > MAX_NDIM:
        raise _FormatError(f"has an array with {ndim} dimensions")
    return cursor.unpack(f"<{max(ndim, 0)}q")  # ndim -1: unknown shape, no dims follow


def _check_dense(storage: int) -> None:
    if storage != DENSE:
        kind = STORAGE_NAMES.get(storage, f"storage type {storage}")
        raise _FormatError(f"holds a {kind} array; only dense arrays are supported")


def _read_names(cursor: _Cursor, count: int) -> list[str]:
    names = cursor.scalar("<Q")
    if names not in (0, count):
        raise _FormatError(f"has {names} names for {count} arrays")
    return [_read_name(cursor) for _ in range(names)]


def _read_name(cursor: _Cursor) -> str:
    size = cursor.scalar("<Q")
    start = cursor.take(size)
    return cursor.buffer[start : start + size].decode("utf-8", "replace")


def write_ndarray_file(path: Path | str, array: np.ndarray, name: str | None = None) -> None:
    """Write ``array`` as a V2 dense NDArray file: an unnamed list, or a one-entry dict when
    ``name`` is given (``mx.nd.save(path, [a])`` / ``mx.nd.save(path, {name: a})``).

    Raises ValueError for a dtype the format cannot hold or a 0-d array.
    """
    Path(path).write_bytes(_encode([array], None if name is None else [name]))


def write_ndarray_dict(path: Path | str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` as a named V2 dense NDArray file, in their order (``mx.nd.save(path,
    {...})``, the way SageMaker's PCA writes its ``model_algo-1``)."""
    Path(path).write_bytes(_encode(list(arrays.values()), list(arrays)))


def read_ndarray_dict(path: Path | str) -> dict[str, np.ndarray]:
    """The named arrays of the NDArray dict file at ``path``; ModelLoadError as
    ``read_ndarray_file`` when it is not one (an unnamed list included)."""
    path = Path(path)
    with _load_errors(path):
        cursor = _Cursor(read_bytes(path))
        header, _reserved, count = cursor.unpack("<QQQ")
        if header != LIST_MAGIC:
            raise _FormatError(f"not an MXNet NDArray file (header 0x{header:x})")
        arrays = [_read_array(cursor).copy() for _ in range(count)]
        names = _read_names(cursor, count)
    if len(names) != count:
        raise ModelLoadError(f"{path}: holds unnamed arrays, expected named ones")
    return dict(zip(names, arrays, strict=True))


def _encode(arrays: list[np.ndarray], names: list[str] | None) -> bytes:
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for array in arrays:
        flag, data = _encode_data(np.asarray(array))
        parts += [
            struct.pack("<Iii", V2_MAGIC, DENSE, data.ndim),
            struct.pack(f"<{data.ndim}q", *data.shape),
            struct.pack("<iii", *CPU_CONTEXT, flag),
            data.tobytes(order="C"),
        ]
    return b"".join([*parts, _encode_names(names or [])])


def _encode_data(array: np.ndarray) -> tuple[int, np.ndarray]:
    if array.ndim == 0:
        raise ValueError("an NDArray file cannot hold a 0-d array")
    little = array.dtype.newbyteorder("<")
    flags = [flag for flag, dtype in DTYPES.items() if dtype == little]
    if not flags:
        raise ValueError(f"an NDArray file cannot hold dtype {array.dtype}")
    return flags[0], np.ascontiguousarray(array, dtype=little)


def _encode_names(names: list[str]) -> bytes:
    encoded = [name.encode() for name in names]
    return struct.pack("<Q", len(encoded)) + b"".join(
        struct.pack("<Q", len(name)) + name for name in encoded
    )
