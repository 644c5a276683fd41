"""WholeBody over real sockets: gunicorn's own parser reads requests from one end of a socket
pair, the test writes HTTP/1.1 to the other, as nginx or a client would."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.http.body import Body
from gunicorn.http.parser import RequestParser

from smserve.http import whole_body
from smserve.http.whole_body import WholeBody

BODY = bytes(range(256)) * 4096  # 1 MiB, larger than a socket buffer


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def request(body: bytes, path: str = "/invocations") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def next_request(parser: RequestParser) -> Any:
    """The parser's next request, as the worker gets it, with WholeBody installed."""
    req = next(parser)
    whole_body.install(req)
    return req


def send_later(sock: socket.socket, data: bytes, pieces: int, then_close: bool = False) -> None:
    """Send ``data`` in ``pieces`` writes, pausing between them, on another thread."""

    def run() -> None:
        step = -(-len(data) // pieces)
        for start in range(0, len(data), step):
            sock.sendall(data[start : start + step])
            time.sleep(0.01)
        if then_close:
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=run, daemon=True).start()


def test_a_length_delimited_body_is_read_whole(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    send_later(client, request(BODY), pieces=7)
    req = next_request(RequestParser(Config(), server, ("peer", 0)))
    assert type(req.body) is WholeBody
    assert req.body.read(len(BODY)) == BODY
    assert req.body.read(1) == b""


@pytest.mark.parametrize("size", [None, -1, len(BODY) + 10], ids=["none", "negative", "more"])
def test_reading_more_than_is_left_gives_the_body(
    pair: tuple[socket.socket, socket.socket], size: int | None
) -> None:
    server, client = pair
    send_later(client, request(BODY), pieces=3)
    req = next_request(RequestParser(Config(), server, ("peer", 0)))
    assert req.body.read(size) == BODY


def test_pipelined_requests_keep_their_framing(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    bodies = [b"1,2,3\n", BODY, b"", b"4,5\n" * 3000, b"6\n"]
    client.sendall(b"".join(request(body) for body in bodies[:1]))  # fits the socket buffer
    send_later(client, b"".join(request(body) for body in bodies[1:]), pieces=5)
    parser = RequestParser(Config(), server, ("peer", 0))
    for body in bodies:
        req = next_request(parser)
        assert req.body.read(len(body) or 1) == body


def test_a_read_in_parts_gives_the_same_bytes(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    send_later(client, request(BODY) + request(b"next"), pieces=4)
    parser = RequestParser(Config(), server, ("peer", 0))
    req = next_request(parser)
    parts = [req.body.read(1000), req.body.read(300_000), req.body.read(len(BODY))]
    assert b"".join(parts) == BODY
    assert next_request(parser).body.read(100) == b"next"


def test_a_body_that_ends_early_gives_what_came(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    send_later(client, request(BODY)[: -len(BODY) // 2], pieces=3, then_close=True)
    req = next_request(RequestParser(Config(), server, ("peer", 0)))
    assert req.body.read(len(BODY)) == BODY[: len(BODY) - len(BODY) // 2]
    assert req.body.read(len(BODY)) == b""


def test_a_reset_fails_the_body_so_the_connection_closes(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = pair
    client.sendall(request(BODY)[:5000])
    req = next_request(RequestParser(Config(), server, ("peer", 0)))
    server.settimeout(0.2)  # a client that stalls: the read times out
    with pytest.raises(TimeoutError):
        req.body.read(len(BODY))
    assert req.body.failed


def test_chunked_bodies_keep_gunicorn_s_reader(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    head = b"POST /invocations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    client.sendall(head + b"5\r\nhello\r\n0\r\n\r\n" + request(b"after"))
    parser = RequestParser(Config(), server, ("peer", 0))
    req = next_request(parser)
    assert type(req.body) is Body
    assert req.body.read(100) == b"hello"
    assert next_request(parser).body.read(100) == b"after"


def test_a_source_without_a_socket_keeps_gunicorn_s_body() -> None:
    req = next_request(RequestParser(Config(), iter([request(b"1,2\n")]), ("peer", 0)))
    assert type(req.body) is Body
    assert req.body.read(100) == b"1,2\n"


@pytest.mark.parametrize("size", [whole_body.IN_PLACE_BYTES - 1, 5 * whole_body.IN_PLACE_BYTES])
def test_a_body_is_received_in_place_after_what_the_parser_holds(
    pair: tuple[socket.socket, socket.socket], size: int
) -> None:
    server, client = pair
    body = bytes(range(251)) * (size // 251) + b"x" * (size % 251)
    send_later(client, request(body), pieces=5)
    req = next_request(RequestParser(Config(), server, ("peer", 0)))
    assert req.body.read() == body


def test_in_place_a_body_cut_short_comes_back_short(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = pair
    held, rest = b"h" * 100, b"r" * 3000
    client.sendall(rest)
    client.shutdown(socket.SHUT_WR)
    assert whole_body.receive_after(held, server, 10_000) == held + rest
