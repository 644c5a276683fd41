"""The upstream worker in the real server: nginx in front, gunicorn's master, a real model.
Besides nginx's own traffic, these tests reach the worker's unix socket directly, as only a
local process could: a peer that is not nginx is answered or dropped, never served wrongly or
allowed to hold the one request thread."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process.servers import Server, running_server

pytestmark = pytest.mark.process

ROW = b"0.5,-1.0,0.25,2.0\n"


@pytest.fixture(scope="module")
def server(xgb_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"SM_MODEL_DIR": str(xgb_model_dir), "SMSERVE_FRONTEND": "nginx"}
    with running_server(tmp_path_factory.mktemp("logs"), env) as started:
        yield started


def upstream_socket(server: Server) -> str:
    found = re.search(r"Listening at: unix:(\S+)", server.output())
    assert found is not None, server.output()
    assert "Using worker: smserve.http.upstream.worker.UpstreamWorker" in server.output()
    return found.group(1)


def connect(server: Server) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(upstream_socket(server))
    return sock


def invocation(body: bytes) -> bytes:
    head = (
        "POST /invocations HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/csv\r\n"
        f"Accept: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def through_nginx(server: Server, body: bytes) -> tuple[int, bytes]:
    connection = server.connection()
    try:
        headers = {"Content-Type": "text/csv", "Accept": "application/json"}
        connection.request("POST", "/invocations", body, headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def test_a_malformed_head_gets_a_json_400_and_the_connection_closes(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        head, _, body = read_until_closed(sock).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"Connection: close" in head
    message = json.loads(body)
    assert set(message) == {"error", "message"}
    assert "Transfer-Encoding" in message["message"]


def test_requests_sent_together_are_answered_in_order_as_through_nginx(server: Server) -> None:
    expected = [through_nginx(server, ROW)[1], through_nginx(server, ROW * 3)[1]]
    with connect(server) as sock:
        sock.sendall(invocation(ROW) + invocation(ROW * 3))
        stream = sock.makefile("rb")
        for want in expected:
            assert stream.readline() == b"HTTP/1.1 200 OK\r\n"
            headers = dict(
                line.rstrip(b"\r\n").split(b": ", 1) for line in iter(stream.readline, b"\r\n")
            )
            assert stream.read(int(headers[b"Content-Length"])) == want


def test_idle_and_half_sent_peers_do_not_hold_the_request_thread(server: Server) -> None:
    # one worker with one thread: a thread that waited on any of these would stall nginx's
    idle = [connect(server) for _ in range(3)]
    half = [connect(server) for _ in range(3)]
    try:
        for sock in half:
            sock.sendall(invocation(ROW)[:30])
        started = time.monotonic()
        for _ in range(5):
            assert through_nginx(server, ROW)[0] == 200
        assert time.monotonic() - started < 5
        half[0].sendall(invocation(ROW)[30:])  # the rest comes: it is answered
        assert half[0].recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")
    finally:
        for sock in idle + half:
            sock.close()


def test_a_peer_gone_mid_body_costs_nothing(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(invocation(ROW * 100)[:-50])
    assert through_nginx(server, ROW) == (200, through_nginx(server, ROW)[1])


@pytest.mark.parametrize(("method", "path"), [("M-SEARCH", "/invocations"), ("MY_METHOD", "/ping")])
def test_a_method_no_route_takes_is_a_405_with_allow_through_nginx(
    server: Server, method: str, path: str
) -> None:
    # gunicorn takes any token method (no lower case, 3-20 characters), and so does this worker
    before = server.output().count("malformed")
    connection = server.connection()
    try:
        connection.request(method, path, headers={"Host": "localhost"})
        answer = connection.getresponse()
        body = answer.read()
        connection.request("GET", "/ping")  # the same connection to nginx goes on
        again = connection.getresponse()
        again.read()
    finally:
        connection.close()
    assert answer.status == 405, body
    assert answer.getheader("Allow"), answer.getheaders()
    assert set(json.loads(body)) == {"error", "message"}
    assert again.status == 200
    time.sleep(0.5)  # a warning would be logged by now
    assert server.output().count("malformed") == before


def test_a_method_gunicorn_refuses_is_still_a_400(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"get /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        head = read_until_closed(sock).partition(b"\r\n\r\n")[0]
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
