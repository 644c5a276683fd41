"""One request on one upstream connection: its head read and parsed, the WSGI app called, the
answer written (the head and a small body in one ``send``).

The answer is framed by its Content-Length when the app gives one (every answer of ours does),
else chunked; a HEAD, 1xx, 204 or 304 answer has no body. An answer that declared more bytes than
the app wrote cannot be framed, so its connection closes; bytes past the declared length are not
sent. ``Answer.force_close`` is what ``http.draining.BodyDrain`` calls when it could not drain a
body: the answer then says ``Connection: close``.
"""

from __future__ import annotations

import enum
import socket
import struct
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from smserve.http.upstream import wire
from smserve.http.upstream.body import Body

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

RECEIVE_BYTES = 1 << 16
_JOIN_BELOW = 1 << 16  # a smaller body goes out in the head's send (one copy, one syscall)


class Next(enum.Enum):
    """What becomes of a connection after ``serve_next``."""

    KEEP = "keep"  # answered; the connection may carry another request
    WAIT = "wait"  # nothing to read yet: wait for the next event
    CLOSE = "close"


class AnswerCut(Exception):
    """The app failed after part of its answer was sent: the connection can only close."""


class Connection:
    """An upstream connection and the bytes received on it past the last request.

    The socket blocks, with the kernel's send and receive timeouts (``seconds``; none for 0)
    rather than Python's: a socket with a Python timeout polls before every call, and would
    wait out its timeout where this code asks for what is there now (``MSG_DONTWAIT``)."""

    __slots__ = ("sock", "buffer", "idle_since", "busy")

    def __init__(self, sock: socket.socket, seconds: float = 0) -> None:
        sock.setblocking(True)
        if seconds > 0:
            whole = int(seconds)
            limit = struct.pack("ll", whole, int((seconds - whole) * 1e6))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, limit)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, limit)
        self.sock = sock
        self.buffer = b""
        self.idle_since = time.monotonic()
        self.busy = False


class Answer:
    """``start_response`` and the answer's writer for one request."""

    __slots__ = (
        *("_sock", "_method", "close", "_status", "_headers"),
        *("head_sent", "_chunked", "_has_body", "_left"),
    )

    def __init__(self, sock: socket.socket, method: str, close: bool) -> None:
        self._sock = sock
        self._method = method
        self.close = close
        self._status = ""
        self._headers: list[tuple[str, str]] = []
        self.head_sent = False
        self._chunked = self._has_body = False
        self._left: int | None = None  # bytes still owed under a Content-Length

    def start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Callable[[bytes], None]:
        if exc_info is not None and self.head_sent:
            raise exc_info[1].with_traceback(exc_info[2])
        self._status, self._headers = status, headers
        return self.write

    def force_close(self) -> None:
        """The answer closes its connection (``BodyDrain``: a body that was not drained)."""
        self.close = True

    def write(self, data: bytes) -> None:
        if not self.head_sent:
            self._send_head(data)
        elif data and self._has_body:
            self._send_body(data)

    def finish(self) -> None:
        """Send what is still owed: the head of an answer without a body, the last chunk."""
        if not self.head_sent:
            self._send_head(b"")
        if self._chunked:
            self._sock.sendall(b"0\r\n\r\n")
        elif self._left:
            self.close = True  # the app wrote less than it declared: no way to frame the rest

    def _send_head(self, first: bytes) -> None:
        self._has_body = wire.may_have_body(self._status, self._method)
        length = _declared_length(self._headers)
        self._chunked = self._has_body and length is None
        self._left = length if self._has_body else None
        head = wire.answer_head(self._status, self._headers, self.close, self._chunked)
        self.head_sent = True
        if not (first and self._has_body):
            self._sock.sendall(head)
        elif len(first) < _JOIN_BELOW and not self._chunked:
            self._sock.sendall(head + self._owed(first))
        else:
            self._sock.sendall(head)
            self._send_body(first)

    def _send_body(self, data: bytes) -> None:
        if self._chunked:
            self._sock.sendall(b"%x\r\n%b\r\n" % (len(data), data))
        else:
            self._sock.sendall(self._owed(data))

    def _owed(self, data: bytes) -> bytes:
        if self._left is None:
            return data
        data = data[: self._left]
        self._left -= len(data)
        return data


def _declared_length(headers: list[tuple[str, str]]) -> int | None:
    for name, value in headers:
        if name.lower() == "content-length" and value.isdigit():
            return int(value)
    return None


def serve_next(conn: Connection, app: WSGIApplication, shared: dict[str, Any], stop: bool) -> Next:
    """Read and answer the next request on ``conn``: WAIT while its head is incomplete. Raises
    OSError when the connection fails, HeadError for a head that cannot be taken."""
    head = _next_head(conn)
    if isinstance(head, Next):
        return head
    request = wire.parse(head, shared)
    held, conn.buffer = conn.buffer[: request.length], conn.buffer[request.length :]
    body = Body(conn.sock, held, request.length)
    request.environ["wsgi.input"] = body
    method = request.environ["REQUEST_METHOD"]
    answer = Answer(conn.sock, method, close=stop or not request.keep_alive)
    try:
        respond(app, request.environ, answer)
    except Exception as exc:
        if answer.head_sent and not isinstance(exc, OSError):
            raise AnswerCut() from exc
        raise
    return Next.KEEP if body.finished and not answer.close else Next.CLOSE


def respond(app: WSGIApplication, environ: dict[str, Any], answer: Answer) -> None:
    """Call ``app`` and write all it answers."""
    result: Iterable[bytes] = app(environ, answer.start_response)
    try:
        for chunk in result:
            answer.write(chunk)
        answer.finish()
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


def _next_head(conn: Connection) -> bytes | Next:
    """The next request's head without its blank line (what follows stays in ``conn.buffer``);
    WAIT while it is incomplete, CLOSE when the peer closed between requests."""
    if wire.HEAD_END not in conn.buffer:
        try:
            more = conn.sock.recv(RECEIVE_BYTES, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return Next.WAIT
        if not more:
            if conn.buffer:
                raise wire.HeadError("the connection closed inside a request head")
            return Next.CLOSE
        conn.buffer += more
        if wire.HEAD_END not in conn.buffer:
            if len(conn.buffer) > wire.MAX_HEAD_BYTES:
                raise wire.HeadError(f"a request head over {wire.MAX_HEAD_BYTES} bytes")
            return Next.WAIT
    head, _, conn.buffer = conn.buffer.partition(wire.HEAD_END)
    return head
