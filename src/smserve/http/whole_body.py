"""A request body of known length read whole, in one ``recv``, by the worker's threads.

gunicorn's ``Body`` reads a Content-Length body 1 MiB per ``recv`` and copies it through two
``BytesIO`` buffers and a final join. ``WholeBody`` answers a read of everything that is left
with what gunicorn's parser already holds (the part of the body that came with the headers,
at most 8 KiB) plus one ``recv(rest, MSG_WAITALL)``, joined once: about 1.7 ms less per
4.6 MB CSV request through nginx (BENCHMARKS.md, columnar section).

A large body (an asynchronous-inference payload of up to 1 GB) is received into one buffer that
already holds the parser's part, and handed on as that same bytes object (``receive_after``):
the worker holds one copy of the body, not the two a join would need at its peak.

Every other read (a part of the body, a chunked or close-delimited body, TLS sockets, which
take no ``recv`` flags) is gunicorn's own, and a body that ends early, a reset or a timeout
behaves as with gunicorn's reader: fewer bytes, then ``b""``, or the error, with the body
marked failed so that the connection is not reused.
"""

from __future__ import annotations

import io
import socket
import ssl
from typing import Any

from gunicorn.http.body import Body, LengthReader
from gunicorn.http.unreader import SocketUnreader


def install(request: Any) -> None:
    """Give ``request`` (gunicorn's Request, before the app runs) a WholeBody when its body is
    length-delimited on a plain socket; otherwise leave it as it is."""
    body: Any = getattr(request, "body", None)
    if type(body) is Body and _plain_length_reader(body.reader):
        request.body = WholeBody(body.reader)


def _plain_length_reader(reader: Any) -> bool:
    if type(reader) is not LengthReader or not isinstance(reader.unreader, SocketUnreader):
        return False
    sock = reader.unreader.sock
    return isinstance(sock, socket.socket) and not isinstance(sock, ssl.SSLSocket)


class WholeBody(Body):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's Body, but a read of all that is left is one ``recv`` (see the module)."""

    def read(self, size: int | None = None) -> bytes:
        left = self.reader.length
        if left == 0 or self.buf.tell() or self.getsize(size) < left:
            return bytes(super().read(size))
        try:
            data = self._read_rest(left)
        except Exception:
            self.failed = True  # gunicorn's flag: this connection is not reused
            raise
        self.reader.length -= len(data)
        return data

    def _read_rest(self, left: int) -> bytes:
        unreader = self.reader.unreader
        held: bytes = unreader.buf.getvalue()
        if held:
            unreader.buf.seek(0)
            unreader.buf.truncate()
        if len(held) >= left:  # the parser read past this body: keep the rest for later
            unreader.unread(held[left:])
            return bytes(held[:left])
        return receive_rest(held, unreader.sock, left)


IN_PLACE_BYTES = 1 << 20  # smaller bodies: one join is cheaper than preparing a buffer


def receive_rest(held: bytes, sock: socket.socket, size: int) -> bytes:
    """``held`` (fewer than ``size`` bytes already received) and the rest of ``size`` from
    ``sock``, with the fewest copies: one receive without ``held``, a join below
    ``IN_PLACE_BYTES``, in place (``receive_after``) above. Fewer only if the peer closed."""
    if not held:
        return receive(sock, size)
    if size < IN_PLACE_BYTES:
        return held + receive(sock, size - len(held))
    return receive_after(held, sock, size)


def receive_after(held: bytes, sock: socket.socket, size: int) -> bytes:
    """``held`` followed by up to ``size - len(held)`` bytes from ``sock``, received in place.

    The bytes are read straight into the buffer of a BytesIO sized for all of them, whose
    ``getvalue`` then hands over that buffer itself rather than a copy (CPython does so when
    the buffer is exactly full and no view is open; elsewhere it copies, which is only
    slower). Fewer bytes come back when the peer closed first."""
    buffer = io.BytesIO()
    buffer.write(held)
    buffer.seek(size - 1)
    buffer.write(b"\0")  # sizes the buffer once
    received = len(held)
    with buffer.getbuffer() as view:
        while received < size:
            count = sock.recv_into(view[received:], size - received, socket.MSG_WAITALL)
            if not count:
                break
            received += count
    if received < size:
        buffer.truncate(received)
    return buffer.getvalue()


def receive(sock: socket.socket, size: int) -> bytes:
    """Up to ``size`` bytes from ``sock``: fewer only when the peer closed first."""
    data = sock.recv(size, socket.MSG_WAITALL)
    if len(data) == size or not data:
        return data
    pieces = [data]  # a signal or a timeout-mode socket cut the wait short
    missing = size - len(data)
    while missing > 0:
        more = sock.recv(missing, socket.MSG_WAITALL)
        if not more:
            break
        pieces.append(more)
        missing -= len(more)
    return b"".join(pieces)
