"""Keep-alive that never desyncs: a request body the app did not read is drained, or the
connection is closed, before the answer goes out.

An answer given without reading the body (404, 405, 413, 415, ...) leaves the body on the
socket. gunicorn drains at most 64 KiB of it after the response and then closes the
connection — after it has already announced ``Connection: keep-alive``, so the client's next
request on that connection fails (and behind nginx, with upstream keep-alive, that is a 502).
``BodyDrain`` wraps the outermost WSGI callable: when the app starts its response, whatever
is left of the body is read and dropped, up to the payload limit. A body larger than that
(possible only without nginx, which refuses it itself) is not read: the response is marked
``Connection: close`` instead (through gunicorn's Response, whose ``start_response`` this is;
gunicorn drops a Connection header set by the app)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

CHUNK = 1 << 16
# Set in the environ when the app's read of the body failed (a malformed chunked body, a
# client gone mid-body): where the next request would start is unknown, so close.
UNREADABLE = "smserve.body_unreadable"


class BodyDrain:
    """WSGI middleware: drain (up to ``limit`` bytes) or close before every response."""

    def __init__(self, app: WSGIApplication, limit: int) -> None:
        self.app = app
        self.limit = limit

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not _may_have_body(environ):
            return self.app(environ, start_response)

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if not self._drained(environ):
                _force_close(start_response)
            return start_response(status, headers, exc_info)

        return self.app(environ, start)

    def _drained(self, environ: WSGIEnvironment) -> bool:
        if environ.get(UNREADABLE) or _declared_length(environ) > self.limit:
            return False  # broken framing, or too large to read: close instead
        return drain(environ["wsgi.input"], self.limit)


def mark_unreadable(environ: WSGIEnvironment) -> None:
    """The body could not be read to its end: the answer will close the connection."""
    environ[UNREADABLE] = True


def drain(stream: IO[bytes], limit: int) -> bool:
    """Read ``stream`` to its end, at most ``limit + 1`` bytes; True when it ended."""
    budget = limit + 1
    try:
        while budget > 0:
            chunk = stream.read(min(CHUNK, budget))
            if not chunk:
                return True
            budget -= len(chunk)
    except (OSError, ValueError):  # the client went away, or a malformed chunked body
        return False
    return False


def _may_have_body(environ: WSGIEnvironment) -> bool:
    length = environ.get("CONTENT_LENGTH")
    return bool(length and length != "0") or "HTTP_TRANSFER_ENCODING" in environ


def _declared_length(environ: WSGIEnvironment) -> int:
    length = environ.get("CONTENT_LENGTH")
    return int(length) if isinstance(length, str) and length.isdigit() else 0


def _force_close(start_response: StartResponse) -> None:
    response = getattr(start_response, "__self__", None)
    force_close = getattr(response, "force_close", None)
    if callable(force_close):
        force_close()
