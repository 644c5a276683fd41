"""Decoding a UBJSON document (XGBoost's binary model format), refusing one that is not whole:
XGBoost 3 crashes the whole process (SIGSEGV, or an abort on an empty buffer) on some truncated
UBJSON files instead of raising, so a file must be decoded first. ``decode`` serves the
load-time checks (``validation``) and ``xgboost.fast_trees``: XGBoost writes each tree's node
arrays as typed arrays, which decode to read-only buffers over the document's bytes (exact
float32 included, no Python object per number): numpy views here, or the compiled decoder's
``TypedArray``s (``_ubjson.c``, the same values about ten times faster; this module decodes
without it). ``np.asarray`` views either.

Covers the UBJSON draft-12 markers XGBoost writes and reads, including typed, counted
containers (``[$d#L<n>``), whose payload is skipped (or viewed) in one step.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

try:
    from smserve.algorithms.xgboost import _ubjson
except ImportError:  # built without its optional extension: the Python decoder below
    _ubjson = None  # type: ignore[assignment]

# Payload bytes after the marker for fixed-size values.
_FIXED = {ord(c): size for c, size in (("Z", 0), ("N", 0), ("T", 0), ("F", 0), ("i", 1), ("U", 1))}
_FIXED |= {ord(c): size for c, size in (("C", 1), ("I", 2), ("l", 4), ("d", 4), ("L", 8), ("D", 8))}
_INTEGERS = {ord("i"): ">b", ord("U"): ">B", ord("I"): ">h", ord("l"): ">i", ord("L"): ">q"}
_SIZED = (ord("S"), ord("H"))  # string, high-precision number: a length, then the bytes
_OPEN = {ord("["): ord("]"), ord("{"): ord("}")}
_TYPE, _COUNT = ord("$"), ord("#")
_NUMBERS = {**_INTEGERS, ord("d"): ">f", ord("D"): ">d"}  # marker -> big-endian struct format
_CONSTANTS = {ord("Z"): None, ord("T"): True, ord("F"): False}
MAX_DEPTH = 256


class UbjsonError(Exception):
    """The bytes are not one complete UBJSON document; the message says where."""


class Truncated(UbjsonError):
    """The document ends before its last value does."""


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


TYPED_ARRAYS: tuple[type, ...] = (
    (np.ndarray,) if _ubjson is None else (np.ndarray, _ubjson.TypedArray)
)


def typed_format(array: Any) -> str:
    """The struct format of one item of a typed array ``decode`` returned (big-endian)."""
    if type(array) is not np.ndarray:
        return str(array.format)
    return str(array.dtype.str)


def decode(data: bytes) -> Any:
    """The document as Python values: objects as dicts, strings and high-precision numbers as
    str, typed arrays of numbers as read-only buffers over ``data`` (big-endian; one of
    ``TYPED_ARRAYS``). Raises Truncated when ``data`` ends inside the document, UbjsonError
    when it is not UBJSON or has bytes after the document."""
    if _ubjson is not None:
        return _compiled(bytes(data))
    return decode_in_python(data)


def _compiled(data: bytes) -> Any:
    try:
        return _ubjson.decode(data)
    except EOFError as exc:
        raise Truncated(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise UbjsonError(str(exc)) from None


def decode_in_python(data: bytes) -> Any:
    """``decode`` without the compiled decoder: typed arrays as numpy views of ``data``."""
    decoder = _Decoder(data)
    value = decoder.decoded(decoder.marker(), 0)
    if decoder.offset != len(data):
        raise UbjsonError(f"{len(data) - decoder.offset} unexpected bytes after the document")
    return value


class _Decoder(_Scanner):
    def decoded(self, marker: int, depth: int) -> Any:
        while marker == ord("N"):  # no-op padding
            marker = self.marker()
        if marker in _NUMBERS:
            fmt = _NUMBERS[marker]
            return struct.unpack_from(fmt, self.data, self.take(struct.calcsize(fmt)))[0]
        if marker in _CONSTANTS:
            return _CONSTANTS[marker]
        if marker in _SIZED or marker == ord("C"):
            return self.text(1 if marker == ord("C") else self.length(self.marker()))
        if marker in _OPEN:
            if depth >= MAX_DEPTH:
                raise UbjsonError(f"containers nested deeper than {MAX_DEPTH}")
            return self.decoded_container(marker == ord("{"), depth + 1)
        raise UbjsonError(f"unknown marker {chr(marker)!r} at byte {self.offset - 1}")

    def decoded_container(self, is_object: bool, depth: int) -> Any:
        kind, count = self.header()
        if count is not None and kind in _NUMBERS and not is_object:
            dtype = np.dtype(_NUMBERS[kind])
            start = self.take(count * dtype.itemsize)
            return np.frombuffer(self.data, dtype=dtype, count=count, offset=start)
        items = self.items(is_object, kind, count, depth)
        return dict(items) if is_object else [value for _key, value in items]

    def items(
        self, is_object: bool, kind: int | None, count: int | None, depth: int
    ) -> list[tuple[str, Any]]:
        if count is not None and kind in _CONSTANTS and count > len(self.data):
            raise UbjsonError(f"{count} values of no size: more than the document could hold")
        closing = ord("}") if is_object else ord("]")
        items: list[tuple[str, Any]] = []
        while count is None or len(items) < count:
            marker = kind if kind is not None and not is_object else self.marker()
            if count is None and marker == closing:
                break
            key = ""
            if is_object:
                key = self.text(self.length(marker))
                marker = self.marker() if kind is None else kind
            items.append((key, self.decoded(marker, depth)))
        return items

    def text(self, size: int) -> str:
        start = self.take(size)
        try:
            return bytes(self.data[start : self.offset]).decode()
        except UnicodeDecodeError:
            raise UbjsonError(f"a string at byte {start} is not UTF-8") from None


def member_bytes(data: bytes, key: str) -> bytes | None:
    """The bytes of member ``key`` of the top-level object (a UBJSON document of its own),
    found without decoding the others; None when the object has no such member."""
    scanner = _Scanner(data)
    if scanner.marker() != ord("{"):
        raise UbjsonError("the document is not an object")
    kind, count = scanner.header()
    if kind is not None:
        raise UbjsonError("the document is a typed object")
    wanted, seen = key.encode(), 0
    while count is None or seen < count:
        marker = scanner.marker()
        if count is None and marker == ord("}"):
            return None
        name = bytes(data[scanner.take(scanner.length(marker)) : scanner.offset])
        start = scanner.offset
        scanner.value(scanner.marker(), 1)
        if name == wanted:
            return bytes(data[start : scanner.offset])
        seen += 1
    return None
