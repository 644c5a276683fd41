"""The start-up probe against real sockets: the status of the first answer, however long it
takes; nothing listening yet; a peer that closes without answering; and giving up."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from smserve.frontend import probe


def serve_once(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def run() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                request = connection.recv(4096)
                assert request.startswith(f"GET {probe.PATH} HTTP/1.1\r\n".encode())
                answer(connection)

    threading.Thread(target=run, daemon=True).start()
    yield port
    listener.close()


@pytest.fixture
def bad_gateway() -> Iterator[int]:
    yield from serve_once(lambda c: c.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n"))


@pytest.fixture
def slow_404() -> Iterator[int]:
    def answer(connection: socket.socket) -> None:
        time.sleep(0.5)  # the workers are still loading
        connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    yield from serve_once(answer)


def test_a_502_is_reported(bad_gateway: int) -> None:
    assert probe.through_nginx(bad_gateway, lambda: True) == 502


def test_it_waits_for_a_late_answer(slow_404: int) -> None:
    started = time.monotonic()
    assert probe.through_nginx(slow_404, lambda: True) == 404
    assert time.monotonic() - started >= 0.5


def test_it_retries_until_nginx_listens_and_stops_when_told() -> None:
    with socket.socket() as reserved:
        reserved.bind(("127.0.0.1", 0))
        port = reserved.getsockname()[1]  # bound, not listening: connections are refused
        deadline = time.monotonic() + 0.5
        assert probe.through_nginx(port, lambda: time.monotonic() < deadline) is None


def test_a_peer_that_closes_without_answering_is_asked_again() -> None:
    calls: list[int] = []

    def close_then_answer(connection: socket.socket) -> None:
        calls.append(1)
        if len(calls) > 1:
            connection.sendall(b"HTTP/1.1 200 OK\r\n\r\n")

    for port in serve_once(close_then_answer):
        assert probe.through_nginx(port, lambda: True) == 200
    assert len(calls) == 2
