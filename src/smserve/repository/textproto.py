"""A small reader for protobuf text format, enough for TF Serving's ModelServerConfig files.

Supported: ``field: value`` scalars (numbers, identifiers such as ``true``, strings in single
or double quotes with backslash escapes, adjacent strings concatenated), nested messages as
``field { ... }``, ``field: { ... }`` or ``field < ... >``, ``#`` comments, and optional ``,``
or ``;`` between fields. Repeated fields simply appear more than once. Not supported:
``[...]`` list syntax, extensions and ``Any`` expansion.

The result is untyped: a Message maps each field name to the list of its values in order.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from smserve.errors import ConfigError

Scalar = str | int | float

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<symbol>[{}<>:,;])
    """,
    re.VERBOSE,
)
_CLOSING = {"{": "}", "<": ">"}


@dataclass
class Message:
    fields: dict[str, list[Scalar | Message]] = field(default_factory=dict)

    def add(self, name: str, value: Scalar | Message) -> None:
        self.fields.setdefault(name, []).append(value)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str
    line: int


def _tokens(text: str, source: str) -> list[_Token]:
    tokens, position, line = [], 0, 1
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ConfigError(f"{source}:{line}: unexpected character {text[position]!r}")
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append(_Token(kind, match.group(), line))
        line += match.group().count("\n")
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[_Token], source: str) -> None:
        self.tokens = tokens
        self.position = 0
        self.source = source

    def error(self, message: str) -> ConfigError:
        line = self.tokens[min(self.position, len(self.tokens) - 1)].line if self.tokens else 1
        return ConfigError(f"{self.source}:{line}: {message}")

    def peek(self) -> _Token | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end of file")
        self.position += 1
        return token

    def message(self, closing: str | None) -> Message:
        result = Message()
        while (token := self.peek()) is not None and token.text != closing:
            name = self.take()
            if name.kind != "ident":
                raise self.error(f"expected a field name, got {name.text!r}")
            result.add(name.text, self.value())
            if (separator := self.peek()) is not None and separator.text in ",;":
                self.position += 1
        if closing is not None:
            if self.peek() is None:
                raise self.error(f"missing {closing!r}")
            self.position += 1
        return result

    def value(self) -> Scalar | Message:
        colon = self.peek() is not None and self.peek().text == ":"  # type: ignore[union-attr]
        if colon:
            self.position += 1
        token = self.take()
        if token.text in _CLOSING:
            return self.message(_CLOSING[token.text])
        if not colon:
            raise self.error(f"expected ':' or '{{' before {token.text!r}")
        return self.scalar(token)

    def scalar(self, token: _Token) -> Scalar:
        if token.kind == "string":
            parts = [_unquote(token.text)]
            while (more := self.peek()) is not None and more.kind == "string":
                parts.append(_unquote(self.take().text))
            return "".join(parts)
        if token.kind == "number":
            return _number(token.text)
        if token.kind == "ident":
            return token.text
        raise self.error(f"expected a value, got {token.text!r}")


def _unquote(text: str) -> str:
    return str(ast.literal_eval(text))


def _number(text: str) -> int | float:
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text, 10)
    if "x" in text.lower():
        return int(text, 16)
    return float(text.rstrip("fF"))


def parse(text: str, source: str = "<config>") -> Message:
    """Parse a whole text-format message; raises ConfigError naming the line."""
    parser = _Parser(_tokens(text, source), source)
    return parser.message(None)
