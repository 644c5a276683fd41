"""JSON values as TF Serving quotes them inside error messages (``JSON Value: <text> ...``).

Its writer is rapidjson's PrettyWriter with single-line arrays: objects open a new line per
member with four spaces per level, arrays stay on one line with ``", "`` between elements,
doubles are written shortest-round-trip (``1.0``, ``1e21``, ``1e-7``), and the output stops
at the first write that starts once 256 bytes are written. A NaN or infinity stops it too
(that writer cannot write them), after its separator. Unlike TF Serving, a string (a key or a
value) is cut to an excerpt of that many characters first: a client's 5 MB string is never
quoted whole.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from smserve.errors import excerpt

MAX_DEBUG_BYTES = 256

_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)} | {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    ord('"'): '\\"',
    ord("\\"): "\\\\",
}


class _Stop(Exception):
    """The writer refused a write (over the byte limit, or a non-finite number)."""


def json_type_name(value: Any) -> str:
    """rapidjson's type name: Null, False, True, Object, Array, String or Number."""
    if value is None:
        return "Null"
    if value is True or value is False:
        return str(value)
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    return "String" if isinstance(value, str) else "Number"


def quote(text: str) -> str:
    """A JSON string literal escaped as rapidjson escapes it (non-ASCII kept as is)."""
    return '"' + text.translate(_ESCAPES) + '"'


def format_double(value: float) -> str:
    """rapidjson's text for a finite double: shortest digits, ``.0`` on integral values."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest(abs(value))
    return sign + _prettify(digits, exponent)


def _shortest(value: float) -> tuple[str, int]:
    """(digits, k) with value == int(digits) * 10**k and no trailing zero in digits."""
    _, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    return "".join(map(str, digit_tuple)), exponent


def _prettify(digits: str, k: int) -> str:
    length = len(digits)
    kk = length + k  # 10**(kk-1) <= value < 10**kk
    if 0 <= k and kk <= 21:
        return f"{digits}{'0' * k}.0"
    if 0 < kk <= 21:
        return f"{digits[:kk]}.{digits[kk:]}"
    if -6 < kk <= 0:
        return f"0.{'0' * -kk}{digits}"
    mantissa = digits if length == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{mantissa}e{kk - 1}"


class _Writer:
    """PrettyWriter(kFormatSingleLineArray) behind a byte limit checked before each write."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.levels: list[list[Any]] = []  # [in_array, value_count]

    def _put(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(
            text.encode("utf-8", "surrogatepass")
        )  # "\\ud800" parses to a lone surrogate

    def _check(self) -> None:
        if self.size >= self.limit:
            raise _Stop

    def _prefix(self) -> None:
        if not self.levels:
            return
        level = self.levels[-1]
        if level[0]:
            self._put(", " if level[1] else "")
        else:
            self._object_prefix(level[1])
        level[1] += 1

    def _object_prefix(self, count: int) -> None:
        if count % 2:
            self._put(": ")
            return
        self._put(",\n" if count else "\n")
        self._put("    " * len(self.levels))

    def scalar(self, text: str | None) -> None:
        self._check()
        self._prefix()
        if text is None:
            raise _Stop
        self._put(text)

    def start(self, in_array: bool) -> None:
        self._check()
        self._prefix()
        self.levels.append([in_array, 0])
        self._put("[" if in_array else "{")

    def end(self) -> None:
        self._check()
        in_array, count = self.levels.pop()
        if not in_array and count:
            self._put("\n" + "    " * len(self.levels))
        self._put("]" if in_array else "}")


def debug_string(value: Any, limit: int = MAX_DEBUG_BYTES) -> str:
    """``value`` as TF Serving's error messages print it (possibly cut short)."""
    writer = _Writer(limit)
    try:
        _write(writer, value)
    except _Stop:
        pass
    return "".join(writer.parts)


def _write(writer: _Writer, value: Any) -> None:
    if isinstance(value, dict):
        writer.start(in_array=False)
        for key, item in value.items():
            writer.scalar(quote(excerpt(key, MAX_DEBUG_BYTES)))
            _write(writer, item)
        writer.end()
    elif isinstance(value, list):
        writer.start(in_array=True)
        for item in value:
            _write(writer, item)
        writer.end()
    else:
        writer.scalar(_scalar_text(value))


def _scalar_text(value: Any) -> str | None:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(excerpt(value, MAX_DEBUG_BYTES))
    if isinstance(value, int) and -(2**63) <= value < 2**64:
        return str(value)
    number = float(value) if not isinstance(value, int) else _int_as_double(value)
    return format_double(number) if math.isfinite(number) else None


def _int_as_double(value: int) -> float:
    # rapidjson keeps integers beyond uint64 as doubles.
    try:
        return float(value)
    except OverflowError:
        return math.inf
