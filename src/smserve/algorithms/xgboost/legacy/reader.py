"""A bounds-checked cursor over a model file's bytes. A model file is hostile input: every count
read from it is checked against the bytes that remain (and a sane bound) before anything is
sized by it, and every failure names the file, the byte offset and the field.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from smserve.errors import ModelLoadError

MAX_NAME_BYTES = 256  # objective and booster names, parameter names
MAX_TEXT_BYTES = 16 * 1024 * 1024  # one attribute's value


class Cursor:
    """Reads little-endian values from ``data`` starting at ``offset``."""

    def __init__(self, path: Path, data: bytes | memoryview, offset: int = 0) -> None:
        self.path = path
        self.data = data
        self.offset = offset

    @property
    def remaining(self) -> int:
        return len(self.data) - self.offset

    def fail(self, field: str, detail: str) -> ModelLoadError:
        return ModelLoadError(
            f"{self.path} is not a valid legacy binary XGBoost model: {field} at byte "
            f"{self.offset}: {detail}"
        )

    def take(self, size: int, field: str) -> int:
        """The offset of the next ``size`` bytes, consumed."""
        if size < 0 or size > self.remaining:
            raise self.fail(field, f"needs {size} bytes, {self.remaining} remain (truncated?)")
        start = self.offset
        self.offset += size
        return start

    def unpack(self, fmt: str, field: str) -> tuple[int | float, ...]:
        return struct.unpack_from("<" + fmt, self.data, self.take(struct.calcsize(fmt), field))

    def u64(self, field: str) -> int:
        return int(self.unpack("Q", field)[0])

    def count(self, field: str, item_size: int, limit: int | None = None) -> int:
        """A u64 element count, refused when its elements cannot fit in the remaining bytes
        or it exceeds ``limit``."""
        start = self.offset
        value = self.u64(field)
        if value * item_size > self.remaining or (limit is not None and value > limit):
            self.offset = start
            detail = f"declares {value} items of {item_size}+ bytes; {self.remaining - 8} remain"
            if limit is not None and value > limit:
                detail = f"declares {value} items, more than the limit of {limit}"
            raise self.fail(field, detail)
        return value

    def text(self, field: str, limit: int = MAX_TEXT_BYTES) -> str:
        size = self.count(field, 1, limit)
        raw = bytes(self.data[self.take(size, field) : self.offset])
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise self.fail(field, "is not UTF-8 text") from None

    def array(self, dtype: np.dtype, count: int, field: str) -> np.ndarray:
        """``count`` records of ``dtype``, a read-only view of the bytes (no copy)."""
        if count < 0 or count * dtype.itemsize > self.remaining:
            raise self.fail(field, f"{count} items do not fit in {self.remaining} bytes")
        start = self.take(count * dtype.itemsize, field)
        return np.frombuffer(self.data, dtype=dtype, count=count, offset=start)

    def vector(self, dtype: np.dtype, field: str) -> np.ndarray:
        """A u64 count, then that many records."""
        return self.array(dtype, self.count(field, dtype.itemsize), field)

    def pairs(self, field: str) -> dict[str, str]:
        count = self.count(field, 16)  # each pair holds at least two u64 lengths
        return {self.text(f"{field} key"): self.text(f"{field} value") for _ in range(count)}
