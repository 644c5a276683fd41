"""A request's body read from its WSGI environ, so that the payload limit holds.

A body with a Content-Length is refused unread (413) over the limit and otherwise read in one
call (gunicorn and the upstream worker hand it over in one ``recv``). A body without one
(chunked, with gunicorn alone) is read up to one byte past the limit, which tells a body that is
too large from one that fits exactly, when the server frames it (``wsgi.input_terminated``);
without that, there is no body to read. A body that cannot be read to its end (the client went
away, a malformed chunked body) is a 400, and marks the request's connection for closing
(``draining.mark_unreadable``): where the next request would start is unknown."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from gunicorn.http.errors import ParseException

from smserve.errors import InvalidInput, PayloadTooLarge
from smserve.http.draining import mark_unreadable

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

DISCONNECTED_MESSAGE = "the request body could not be read completely (did the client disconnect?)"
CHUNK = 1 << 16


class BodyIncomplete(Exception):
    """The client sent less than its Content-Length, or reading the body failed."""


def read_body(environ: WSGIEnvironment, limit: int) -> bytes:
    """The body, within ``limit`` bytes; raises PayloadTooLarge (413) or InvalidInput (400)."""
    length = content_length(environ)
    if length is not None and length > limit:
        raise PayloadTooLarge.over(limit)
    try:
        if length is not None:
            return read_exactly(environ["wsgi.input"], length)
        if "wsgi.input_terminated" not in environ:
            return b""
        return _read_within(environ["wsgi.input"], limit)
    except BodyIncomplete:
        mark_unreadable(environ)
        raise InvalidInput(DISCONNECTED_MESSAGE) from None
    except ParseException as exc:  # gunicorn's chunked reader (only without nginx)
        mark_unreadable(environ)
        raise InvalidInput(f"malformed chunked request body: {exc}") from None


def content_length(environ: WSGIEnvironment) -> int | None:
    """The declared length (None: none, or chunked; 0: not a number)."""
    encoding = environ.get("HTTP_TRANSFER_ENCODING")
    length = environ.get("CONTENT_LENGTH")
    if (encoding is not None and "chunked" in encoding.lower()) or length is None:
        return None
    if isinstance(length, str) and length.isascii() and length.isdigit():
        return int(length)
    return 0 if length else None


def read_exactly(stream: IO[bytes], size: int) -> bytes:
    """``size`` bytes, in one read when the server allows; raises BodyIncomplete when the
    stream ends early or fails."""
    chunks, missing = [], size
    try:
        while missing > 0:
            chunk = stream.read(missing)
            if not chunk:
                raise BodyIncomplete()
            chunks.append(chunk)
            missing -= len(chunk)
    except (OSError, ValueError) as exc:
        raise BodyIncomplete() from exc
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_within(stream: IO[bytes], limit: int) -> bytes:
    """All of a framed stream; PayloadTooLarge once it passes ``limit``."""
    chunks: list[bytes] = []
    total = 0
    try:
        while total <= limit:
            chunk = stream.read(min(CHUNK, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
    except (OSError, ValueError) as exc:
        raise BodyIncomplete() from exc
    raise PayloadTooLarge.over(limit)
