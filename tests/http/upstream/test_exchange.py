"""One request at a time on a real socket pair: the test writes what nginx would, the upstream
worker's exchange reads it, calls a WSGI app and writes the answer."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from smserve.http.draining import BodyDrain
from smserve.http.upstream import wire
from smserve.http.upstream.exchange import Connection, Next, serve_next

SHARED = wire.constants(multiprocess=False)
BIG = bytes(range(256)) * 8192  # 2 MiB: more than one recv, more than a socket buffer


def request(body: bytes = b"", method: str = "POST", path: str = "/invocations") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """Answers the body it read, and how the request looked."""
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    about = f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']} {len(body)}\n".encode()
    answer = about + body
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(answer)))])
    return [answer]


def ignore(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """Answers without reading the body."""
    start_response("404 Not Found", [("Content-Length", "0")])
    return []


@pytest.fixture
def pair() -> Iterator[tuple[Connection, socket.socket]]:
    server, client = socket.socketpair()
    client.settimeout(5)
    yield Connection(server, 5), client
    server.close()
    client.close()


def read_answer(client: socket.socket) -> tuple[bytes, bytes]:
    """The next answer on ``client``, framed by its Content-Length: (head, body)."""
    stream = STREAMS.setdefault(client, client.makefile("rb"))
    lines = []
    while (line := stream.readline()) != b"\r\n":
        lines.append(line.rstrip(b"\r\n"))
    length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"Content-Length"))
    return b"\r\n".join(lines), stream.read(length)


STREAMS: dict[socket.socket, Any] = {}


def sending(client: socket.socket, data: bytes) -> threading.Thread:
    thread = threading.Thread(target=client.sendall, args=(data,))
    thread.start()
    return thread


def test_a_request_is_answered_in_one_piece_and_the_connection_waits(pair: Any) -> None:
    conn, client = pair
    client.sendall(request(b"1,2,3"))
    assert serve_next(conn, echo, SHARED, stop=False) is Next.KEEP
    head, body = read_answer(client)
    assert head == b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 25"
    assert body == b"POST /invocations 5\n1,2,3"
    assert serve_next(conn, echo, SHARED, stop=False) is Next.WAIT  # nothing more yet


def test_a_large_body_is_read_whole(pair: Any) -> None:
    conn, client = pair
    sender = sending(client, request(BIG))
    reader = threading.Thread(target=lambda: answers.append(read_answer(client)))
    answers: list[tuple[bytes, bytes]] = []
    reader.start()
    assert serve_next(conn, echo, SHARED, stop=False) is Next.KEEP
    sender.join()
    reader.join()
    assert answers[0][1] == f"POST /invocations {len(BIG)}\n".encode() + BIG


def test_requests_sent_together_are_answered_in_order(pair: Any) -> None:
    conn, client = pair
    client.sendall(request(b"a", path="/one") + request(b"bb", path="/two"))
    assert serve_next(conn, echo, SHARED, stop=False) is Next.KEEP
    assert conn.buffer  # the second request, already received
    assert serve_next(conn, echo, SHARED, stop=False) is Next.KEEP
    assert read_answer(client)[1] == b"POST /one 1\na"
    assert read_answer(client)[1] == b"POST /two 2\nbb"


def test_a_head_in_pieces_waits_for_the_rest(pair: Any) -> None:
    conn, client = pair
    whole = request(b"xyz")
    client.sendall(whole[:20])
    assert serve_next(conn, echo, SHARED, stop=False) is Next.WAIT
    client.sendall(whole[20:])
    assert serve_next(conn, echo, SHARED, stop=False) is Next.KEEP
    assert read_answer(client)[1] == b"POST /invocations 3\nxyz"


def test_an_answer_without_a_length_is_chunked(pair: Any) -> None:
    def stream(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return iter([b"ab", b"", b"cde"])

    conn, client = pair
    client.sendall(request(method="GET", path="/"))
    assert serve_next(conn, stream, SHARED, stop=False) is Next.KEEP
    data = b""
    while not data.endswith(b"0\r\n\r\n"):
        data += client.recv(65536)
    assert data == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n"
    )


def test_head_and_no_content_answers_have_no_body(pair: Any) -> None:
    def answer(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        status = "204 No Content" if environ["PATH_INFO"] == "/none" else "200 OK"
        start_response(status, [("Content-Length", "5")] if status == "200 OK" else [])
        return [b"hello"]

    conn, client = pair
    client.sendall(request(method="HEAD", path="/") + request(method="GET", path="/none"))
    assert serve_next(conn, answer, SHARED, stop=False) is Next.KEEP
    assert serve_next(conn, answer, SHARED, stop=False) is Next.KEEP
    client.shutdown(socket.SHUT_WR)
    assert serve_next(conn, answer, SHARED, stop=False) is Next.CLOSE
    conn.sock.shutdown(socket.SHUT_WR)
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    assert data == b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"


def test_a_body_the_app_left_unread_closes_the_connection(pair: Any) -> None:
    conn, client = pair
    client.sendall(request(b"unread"))
    assert serve_next(conn, ignore, SHARED, stop=False) is Next.CLOSE


def test_body_drain_reads_what_the_app_left_so_the_connection_stays(pair: Any) -> None:
    conn, client = pair
    client.sendall(request(b"unread"))
    assert serve_next(conn, BodyDrain(ignore, 1 << 20), SHARED, stop=False) is Next.KEEP
    client.sendall(request(b"x" * 4096))
    assert serve_next(conn, BodyDrain(ignore, 1024), SHARED, stop=False) is Next.CLOSE
    first, second = read_answer(client)[0], read_answer(client)[0]
    assert b"Connection: close" not in first
    assert second.endswith(b"Connection: close")  # over the limit: not drained, closed


def test_an_answer_shorter_than_declared_closes(pair: Any) -> None:
    def short(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Length", "10")])
        return [b"12345"]

    conn, client = pair
    client.sendall(request(method="GET", path="/"))
    assert serve_next(conn, short, SHARED, stop=False) is Next.CLOSE


def test_a_stopping_worker_says_close(pair: Any) -> None:
    conn, client = pair
    client.sendall(request(b"1"))
    assert serve_next(conn, echo, SHARED, stop=True) is Next.CLOSE
    assert read_answer(client)[0].endswith(b"Connection: close")


def test_a_peer_that_closes_between_requests_closes_and_one_inside_a_head_is_refused(
    pair: Any,
) -> None:
    conn, client = pair
    client.shutdown(socket.SHUT_WR)
    assert serve_next(conn, echo, SHARED, stop=False) is Next.CLOSE
    conn.buffer = b"POST /x HT"
    with pytest.raises(wire.HeadError, match="inside a request head"):
        serve_next(conn, echo, SHARED, stop=False)


def test_a_body_cut_short_reaches_the_app_short_and_closes(pair: Any) -> None:
    seen: list[bytes] = []

    def record(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(environ["wsgi.input"].read())
        start_response("400 Bad Request", [("Content-Length", "0")])
        return []

    conn, client = pair
    client.sendall(request(b"0123456789")[:-4])
    client.shutdown(socket.SHUT_WR)
    assert serve_next(conn, record, SHARED, stop=False) is Next.CLOSE
    assert seen == [b"012345"]


def test_readline_and_iteration_read_the_body_by_lines(pair: Any) -> None:
    lines: list[bytes] = []

    def by_lines(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        stream = environ["wsgi.input"]
        lines.append(stream.readline(3))
        lines.extend(stream)
        start_response("200 OK", [("Content-Length", "0")])
        return []

    conn, client = pair
    client.sendall(request(b"ab\ncd\n" + b"e" * 70000))
    assert serve_next(conn, by_lines, SHARED, stop=False) is Next.KEEP
    assert lines == [b"ab\n", b"cd\n", b"e" * 70000]
