"""``wsgi.input`` for a request from nginx: its Content-Length bytes, first those that came with
the head, then from the socket.

A read of all that is left is one ``recv(MSG_WAITALL)`` (``http.whole_body.receive_rest``, as the
gthread worker reads: a large body is received into one buffer and handed on without a copy).
A body that ends early (nginx went away) gives fewer bytes, then ``b""``; a socket error or
timeout is raised. Either way the body is marked ``failed``: where the next request starts is
unknown, so the connection closes.
"""

from __future__ import annotations

import socket

from smserve.http.whole_body import receive_rest

CHUNK = 1 << 16


class Body:
    """The request body as a file-like object (``read``, ``readline``, iteration)."""

    __slots__ = ("_sock", "_held", "_unreceived", "failed")

    def __init__(self, sock: socket.socket, held: bytes, length: int) -> None:
        self._sock = sock
        self._held = held  # received, not yet read by the app (at most ``length`` bytes)
        self._unreceived = length - len(held)
        self.failed = False

    @property
    def finished(self) -> bool:
        """Every byte of the body was read by the app, and none went missing."""
        return not self._held and self._unreceived == 0 and not self.failed

    def read(self, size: int | None = -1) -> bytes:
        left = len(self._held) + self._unreceived
        wanted = left if size is None or size < 0 else min(size, left)
        if wanted <= len(self._held):
            return self._take(wanted)
        held, self._held = self._held, b""
        return self._receive(held, wanted)

    def readline(self, size: int | None = -1) -> bytes:
        limit = -1 if size is None else size
        while b"\n" not in self._held and self._unreceived and len(self._held) != limit:
            self._held += self._receive(b"", min(CHUNK, self._unreceived))
        end = self._held.find(b"\n") + 1 or len(self._held)
        return self._take(end if limit < 0 else min(end, limit))

    def __iter__(self) -> Body:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def _take(self, count: int) -> bytes:
        taken, self._held = self._held[:count], self._held[count:]
        return taken

    def _receive(self, held: bytes, wanted: int) -> bytes:
        """``held`` and the next ``wanted - len(held)`` bytes from the socket."""
        count = wanted - len(held)
        try:
            data = receive_rest(held, self._sock, wanted)
        except OSError:
            self.failed = True
            raise
        received = len(data) - len(held)
        self._unreceived -= received
        if received < count:
            self.failed = True
            self._unreceived = 0
        return data
