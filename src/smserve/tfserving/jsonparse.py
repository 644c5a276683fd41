"""Request bodies parsed as TF Serving parses them (rapidjson with NaN/Inf and stop-when-done).

* ``NaN``, ``Inf``, ``Infinity``, ``-Inf``, ``-Infinity`` (and ``-NaN``) are numbers.
* Anything after the first complete JSON value is ignored.
* Errors read ``JSON Parse error: <rapidjson message> at offset: <byte offset>``.
* An integer beyond 64 bits reads as a double (an infinity past its range), as rapidjson
  reads it; Python's own parser would refuse one of more than 4,300 digits.

Parsing is charged to the request's memory budget first (``JSON_BYTES_PER_BYTE``, shared
with the other JSON doors).

orjson parses every standard document; only bodies it rejects (non-standard number tokens,
trailing data, a syntax error) take the slower lenient path through the standard library.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, NoReturn

import orjson

from smserve.budget import JSON_BYTES_PER_BYTE, UNLIMITED, RequestBudget
from smserve.errors import InvalidInput

EMPTY_MESSAGE = "JSON Parse error: The document is empty"

_WHITESPACE = " \t\n\r"
# A JSON string, or a bare non-finite number token outside strings.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.])(-?)(NaN|Infinity|Inf)(?![\w.])', re.DOTALL)
_WIDEST_INTEGER = 20  # digits of 2**64: longer integers are doubles in rapidjson

# Python's messages (the part before ':' or ' at') mapped to rapidjson's.
_RAPIDJSON_MESSAGES = {
    "Expecting value": "Invalid value.",
    "Expecting property name enclosed in double quotes": "Missing a name for object member.",
    "Expecting ':' delimiter": "Missing a colon after a name of object member.",
    "Unterminated string starting at": "Missing a closing quotation mark in string.",
    "Invalid control character at": "Invalid encoding in string.",
    "Invalid \\escape": "Invalid escape character in string.",
    "Invalid \\uXXXX escape": "Incorrect hex digit after \\u escape in string.",
    "Illegal trailing comma before end of object": "Missing a name for object member.",
    "Illegal trailing comma before end of array": "Invalid value.",
}


@dataclass(frozen=True, slots=True)
class JsonDocument:
    """A parsed body. ``has_bool_tokens`` is False only when the body cannot hold ``true`` or
    ``false`` anywhere, which lets tensor building take its vectorised path."""

    value: Any
    has_bool_tokens: bool


def parse_document(body: bytes, budget: RequestBudget = UNLIMITED) -> JsonDocument:
    """Parse ``body``; raises InvalidInput with TF Serving's parse-error message,
    PayloadTooLarge when parsing it could cost more than ``budget``."""
    if not body:
        raise InvalidInput(EMPTY_MESSAGE)
    budget.check(JSON_BYTES_PER_BYTE * len(body), f"a {len(body)}-byte JSON body")
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        value = _lenient(body)
    return JsonDocument(value, b"true" in body or b"false" in body)


def _lenient(body: bytes) -> Any:
    text = body.decode("utf-8", "surrogateescape")
    start = _skip_whitespace(text, 0)
    if start == len(text):
        _fail("The document is empty.", body, text, start)
    try:
        value, _end = _DECODER.raw_decode(_standard_tokens(text), start)
    except json.JSONDecodeError as exc:
        message, position = _rapidjson_error(exc, text)
        _fail(message, body, text, position)
    except RecursionError:
        raise InvalidInput("JSON Parse error: the document nests too deeply") from None
    return value


def _integer(text: str) -> int | float:
    return int(text) if len(text.lstrip("-")) <= _WIDEST_INTEGER else float(text)


_DECODER = json.JSONDecoder(parse_int=_integer)


def _skip_whitespace(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def _standard_tokens(text: str) -> str:
    """``Inf`` and ``-Inf`` spelled as Python's decoder wants them; ``-NaN`` is ``NaN``."""
    if "Inf" not in text and "-NaN" not in text:
        return text
    return _TOKENS.sub(_respell, text)


def _respell(match: re.Match[str]) -> str:
    if match.group(2) is None:
        return match.group(0)  # a string: untouched
    if match.group(2) == "NaN":
        return "NaN"
    return f"{match.group(1)}Infinity"


def _rapidjson_error(exc: json.JSONDecodeError, text: str) -> tuple[str, int]:
    position = exc.pos
    if exc.msg == "Expecting ',' delimiter":
        return _delimiter_error(text, position)
    if exc.msg.startswith("Unterminated string"):
        return "Missing a closing quotation mark in string.", len(text)
    return _RAPIDJSON_MESSAGES.get(exc.msg, "Invalid value."), position


def _delimiter_error(text: str, position: int) -> tuple[str, int]:
    previous = text[position - 1] if position else ""
    current = text[position] if position < len(text) else ""
    if previous.isdigit() and current == ".":
        return "Miss fraction part in number.", position + 1
    if previous.isdigit() and current in "eE":
        signed = position + 1 < len(text) and text[position + 1] in "+-"
        return "Miss exponent in number.", position + 1 + signed
    if _innermost_container(text, position) == "{":
        return "Missing a comma or '}' after an object member.", position
    return "Missing a comma or ']' after an array element.", position


def _innermost_container(text: str, position: int) -> str:
    """``{`` or ``[``: the container open at ``position`` (strings skipped)."""
    stack: list[str] = []
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text[:position], re.DOTALL):
        token = match.group(0)
        if token in "[{":
            stack.append(token)
        elif token in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else "["


def _fail(message: str, body: bytes, text: str, position: int) -> NoReturn:
    offset = len(text[:position].encode("utf-8", "surrogateescape"))
    raise InvalidInput(f"JSON Parse error: {message} at offset: {min(offset, len(body))}")
