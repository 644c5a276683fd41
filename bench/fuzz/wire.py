"""HTTP/1.1 over a raw socket: send any bytes (malformed on purpose), read one answer.

Unlike http.client it sends what it is given unchanged (NUL bytes, bad framing), and it tells
apart the ways a connection can fail: closed before any byte of the answer (``Dropped``),
closed in the middle of one (``Truncated``), or no answer in time (``socket.timeout``)."""

from __future__ import annotations

import socket
from dataclasses import dataclass

RECV = 1 << 16
MAX_HEAD = 1 << 16


class Dropped(Exception):
    """The connection closed or was reset before the first byte of an answer."""


class Truncated(Exception):
    """The connection closed or was reset in the middle of an answer."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated name keeps its last value
    body: bytes
    closes: bool  # the server said it closes the connection after this answer

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")


class Wire:
    """One client connection to 127.0.0.1:``port``."""

    def __init__(self, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.answered = 0  # answers read on this connection so far

    def close(self) -> None:
        self.sock.close()

    def exchange(self, request: bytes, head_only: bool = False, half_close: bool = False) -> Answer:
        """Send ``request`` and read its answer (``head_only``: a HEAD, no body follows).

        ``half_close`` shuts the sending side afterwards (a body shorter than declared)."""
        try:
            self.sock.sendall(request)
            if half_close:
                self.sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise Dropped(f"send failed: {exc!r}") from exc
        return self.read_answer(head_only)

    def read_answer(self, head_only: bool = False) -> Answer:
        """The next final answer on this connection (interim 1xx ones are skipped)."""
        while True:
            status, headers = self._head()
            if status >= 200:
                self.answered += 1
                return self._answer(status, headers, head_only)

    def _answer(self, status: int, headers: dict[str, str], head_only: bool) -> Answer:
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        no_body = head_only or status in (204, 304)
        if no_body:
            return Answer(status, headers, b"", "close" in tokens)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return Answer(status, headers, self._chunked(), "close" in tokens)
        if "content-length" in headers:
            body = self._exactly(int(headers["content-length"]))
            return Answer(status, headers, body, "close" in tokens)
        return Answer(status, headers, self._to_close(), True)

    def _head(self) -> tuple[int, dict[str, str]]:
        started = bool(self.buffer)
        while b"\r\n\r\n" not in self.buffer:
            chunk = self._recv(started)
            if not chunk:
                raise (Truncated if started else Dropped)("closed before the answer's head")
            started = True
            self.buffer += chunk
            if len(self.buffer) > MAX_HEAD:
                raise Truncated("answer head over 64 KiB")
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        return parse_head(head)

    def _recv(self, started: bool) -> bytes:
        try:
            return self.sock.recv(RECV)
        except ConnectionResetError as exc:
            raise (Truncated if started else Dropped)(f"reset: {exc!r}") from exc

    def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self._recv(True)
            if not chunk:
                raise Truncated(f"closed after {len(self.buffer)} of {size} body bytes")
            self.buffer += chunk
        body, self.buffer = self.buffer[:size], self.buffer[size:]
        return body

    def _line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            chunk = self._recv(True)
            if not chunk:
                raise Truncated("closed inside a chunked answer")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _chunked(self) -> bytes:
        body = b""
        while size := int(self._line().split(b";")[0], 16):
            body += self._exactly(size)
            self._line()
        while self._line():  # trailers, up to the blank line
            pass
        return body

    def _to_close(self) -> bytes:
        body, self.buffer = self.buffer, b""
        while chunk := self._recv(True):
            body += chunk
        return body


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise Truncated(f"not an HTTP status line: {lines[0][:100]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if parts[0] == "HTTP/1.0" and "keep-alive" not in headers.get("connection", "").lower():
        headers["connection"] = "close"
    return int(parts[1]), headers
