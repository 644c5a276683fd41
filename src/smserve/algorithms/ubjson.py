"""Checking that a UBJSON document (XGBoost's binary model format) is complete, without decoding
it. Exists because XGBoost 3 crashes the whole process (SIGSEGV, or an abort on an empty
buffer) on some truncated UBJSON files instead of raising, so a file must be checked first.

Covers the UBJSON draft-12 markers XGBoost writes and reads, including typed, counted
containers (``[$d#L<n>``), whose payload is skipped in one step.
"""

from __future__ import annotations

import struct

# Payload bytes after the marker for fixed-size values.
_FIXED = {ord(c): size for c, size in (("Z", 0), ("N", 0), ("T", 0), ("F", 0), ("i", 1), ("U", 1))}
_FIXED |= {ord(c): size for c, size in (("C", 1), ("I", 2), ("l", 4), ("d", 4), ("L", 8), ("D", 8))}
_INTEGERS = {ord("i"): ">b", ord("U"): ">B", ord("I"): ">h", ord("l"): ">i", ord("L"): ">q"}
_SIZED = (ord("S"), ord("H"))  # string, high-precision number: a length, then the bytes
_OPEN = {ord("["): ord("]"), ord("{"): ord("}")}
_TYPE, _COUNT = ord("$"), ord("#")
MAX_DEPTH = 256


class UbjsonError(Exception):
    """The bytes are not one complete UBJSON document; the message says where."""


class Truncated(UbjsonError):
    """The document ends before its last value does."""


def check_complete(data: bytes) -> None:
    """Raise Truncated when ``data`` ends inside the document, UbjsonError when it is not
    UBJSON or has bytes after the document."""
    scanner = _Scanner(data)
    scanner.value(scanner.marker(), 0)
    if scanner.offset != len(data):
        raise UbjsonError(f"{len(data) - scanner.offset} unexpected bytes after the document")


class _Scanner:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def take(self, size: int) -> int:
        start = self.offset
        if start + size > len(self.data):
            raise Truncated(f"it ends at byte {len(self.data)}, inside a value at byte {start}")
        self.offset = start + size
        return start

    def marker(self) -> int:
        return self.data[self.take(1)]

    def peek(self) -> int:
        self.take(1)
        self.offset -= 1
        return self.data[self.offset]

    def length(self, marker: int) -> int:
        fmt = _INTEGERS.get(marker)
        if fmt is None:
            raise UbjsonError(f"expected a length at byte {self.offset - 1}, got {chr(marker)!r}")
        (value,) = struct.unpack_from(fmt, self.data, self.take(struct.calcsize(fmt)))
        if value < 0:
            raise UbjsonError(f"negative length {value} at byte {self.offset}")
        return int(value)

    def value(self, marker: int, depth: int) -> None:
        if marker in _FIXED:
            self.take(_FIXED[marker])
        elif marker in _SIZED:
            self.take(self.length(self.marker()))
        elif marker in _OPEN:
            self.container(marker, depth + 1)
        else:
            raise UbjsonError(f"unknown marker {chr(marker)!r} at byte {self.offset - 1}")

    def container(self, opening: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise UbjsonError(f"containers nested deeper than {MAX_DEPTH}")
        is_object = opening == ord("{")
        kind, count = self.header()
        if count is None:
            self.until_closed(_OPEN[opening], is_object, depth)
        elif kind in _FIXED and not is_object:
            self.take(count * _FIXED[kind])  # a typed array: fixed-size payload, no markers
        else:
            for _ in range(count):  # each round consumes at least a byte: bounded by the data
                if is_object:
                    self.take(self.length(self.marker()))
                self.value(self.marker() if kind is None else kind, depth)

    def header(self) -> tuple[int | None, int | None]:
        """The optional ``$type`` and ``#count`` that follow an opening marker."""
        kind = None
        if self.peek() == _TYPE:
            self.offset += 1
            kind = self.marker()
            if self.peek() != _COUNT:
                raise UbjsonError(f"'$' without '#' at byte {self.offset}")
        if self.peek() != _COUNT:
            return None, None
        self.offset += 1
        return kind, self.length(self.marker())

    def until_closed(self, closing: int, is_object: bool, depth: int) -> None:
        marker = self.marker()
        while marker != closing:
            if is_object:  # a key: its length (the marker just read), its bytes, then a value
                self.take(self.length(marker))
                marker = self.marker()
            self.value(marker, depth)
            marker = self.marker()
