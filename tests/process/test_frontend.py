"""The production front end over real sockets: nginx in front of gunicorn (and gunicorn alone).

Stalled clients cannot freeze the server, nothing at the HTTP layer answers HTML, keep-alive
never desyncs after an error, and the supervisor exits with its children."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process.servers import Server, running_server

pytestmark = pytest.mark.process

ROW = b"0.5,-1.0,0.25,2.0\n"
LIMIT = 1024 * 1024  # SAGEMAKER_MAX_PAYLOAD_IN_MB=1
TIMEOUT_S = 2  # client header and body timeouts


def env_for(model_dir: Path, frontend: str) -> dict[str, str]:
    return {
        "SM_MODEL_DIR": str(model_dir),
        "SMSERVE_FRONTEND": frontend,
        "SAGEMAKER_MAX_PAYLOAD_IN_MB": "1",
        "SMSERVE_CLIENT_HEADER_TIMEOUT_S": str(TIMEOUT_S),
        "SMSERVE_CLIENT_BODY_TIMEOUT_S": str(TIMEOUT_S),
        "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
    }


@pytest.fixture(scope="module")
def proxied(xgb_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("logs"), env_for(xgb_model_dir, "nginx")) as s:
        yield s


@pytest.fixture(scope="module")
def alone(xgb_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("logs"), env_for(xgb_model_dir, "gunicorn")) as s:
        yield s


def raw(server: Server, data: bytes, wait_s: float = 5.0) -> bytes:
    """Send ``data`` on a new connection; the response, read to its Content-Length."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=wait_s) as sock:
        sock.sendall(data)
        received = b""
        while not complete(received) and (chunk := sock.recv(65536)):
            received += chunk
        return received


def complete(response: bytes) -> bool:
    head, found, body = response.partition(b"\r\n\r\n")
    length = [line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
    return bool(found and length) and len(body) >= int(length[0].split(b":")[1])


def read_to_close(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def split(response: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def assert_json_error(response: bytes, status: int) -> None:
    code, headers, body = split(response)
    assert code == status, response[:300]
    assert headers["content-type"] == "application/json"
    envelope = json.loads(body[: int(headers["content-length"])])
    assert envelope["error"] == envelope["message"] != ""


def test_served_through_nginx_with_every_header_kept(proxied: Server) -> None:
    connection = proxied.connection()
    connection.request("POST", "/invocations", body=ROW, headers={"Content-Type": "text/csv"})
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Server") == "nginx"
    assert response.getheader("Content-Type") == "text/csv"
    assert response.getheader("X-Model-Version") == "1"
    assert float(response.read()) > 0
    connection.close()
    assert "through nginx" in proxied.output()


def test_a_chunked_body_arrives_whole(proxied: Server) -> None:
    chunked = (
        b"4\r\n0.5,\r\n" + hex(len(ROW) - 4)[2:].encode() + b"\r\n" + ROW[4:] + b"\r\n0\r\n\r\n"
    )
    request = b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Type: text/csv\r\n"
    answer = raw(
        proxied, request + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked
    )
    status, headers, body = split(answer)
    assert (status, headers["content-type"]) == (200, "text/csv")
    assert float(body) > 0


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Bad: a\x00b\r\n\r\n", 400),
        (b"NOT HTTP AT ALL\r\n\r\n", 400),
        (b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
        (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414),
        (b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n", 413),
        (b"POST /invocations HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        (b"GET /ping HTTP/2.0\r\nHost: t\r\n\r\n", 400),
    ],
)
def test_nginx_answers_its_own_errors_in_json(
    proxied: Server, request_bytes: bytes, status: int
) -> None:
    assert_json_error(raw(proxied, request_bytes), status)


def test_stalled_clients_do_not_freeze_the_server(proxied: Server) -> None:
    # More stalled sockets than gunicorn has workers and threads, mid-body and mid-headers.
    stalled = [socket.create_connection(("127.0.0.1", proxied.port)) for _ in range(6)]
    started = time.monotonic()
    for index, sock in enumerate(stalled):
        if index % 2:
            sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Le")
        else:
            sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0.5")
    connection = proxied.connection(timeout_s=2.0)
    for _ in range(20):
        connection.request("POST", "/invocations", body=ROW, headers={"Content-Type": "text/csv"})
        assert connection.getresponse().read() != b""
    connection.close()
    for sock in stalled:  # each is answered 408 or closed once its timeout has passed
        sock.settimeout(TIMEOUT_S + 3)
        answer = read_to_close(sock)
        assert answer == b"" or split(answer)[0] == 408
        sock.close()
    assert time.monotonic() - started < TIMEOUT_S + 2


ERROR_REQUESTS = [  # (method, path, content type, accept) -> one error status each
    ("POST", "/nope", "text/csv", "*/*"),  # 404
    ("PUT", "/invocations", "text/csv", "*/*"),  # 405
    ("POST", "/invocations", "image/png", "*/*"),  # 415
    ("POST", "/invocations", "text/csv", "image/png"),  # 406
    ("POST", "/invocations", "text/csv", "*/*"),  # 400 (the body is not CSV numbers)
]
BODY_SIZES = [0, 1, 65535, 65537, 300_000, LIMIT]


@pytest.mark.parametrize("door", ["proxied", "alone"])
def test_keep_alive_survives_every_error_with_any_body(
    door: str, request: pytest.FixtureRequest
) -> None:
    server: Server = request.getfixturevalue(door)
    for method, path, content_type, accept in ERROR_REQUESTS:
        for size in BODY_SIZES:
            connection = server.connection()
            headers = {"Content-Type": content_type, "Accept": accept}
            connection.request(method, path, body=b"x" * size, headers=headers)
            first = connection.getresponse()
            first.read()
            if first.status >= 400:  # the CSV case with no body is a 204
                assert first.getheader("Content-Type") == "application/json"
            said_close = (first.getheader("Connection") or "").lower() == "close"
            if not said_close:
                connection.request("GET", "/ping")  # on the same socket
                assert connection.getresponse().status == 200, (method, path, size)
            connection.close()


def test_over_the_limit_without_a_proxy_says_close(alone: Server) -> None:
    head = f"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Length: {LIMIT + 10}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", alone.port), timeout=10) as sock:
        sock.sendall(head.encode())
        # The answer may come, and the socket close, before the whole body is sent: a
        # client then fails to send the rest, as curl does, and reads the answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b"x" * (LIMIT + 10))
        answer = read_to_close(sock)
    assert_json_error(answer, 413)
    assert split(answer)[1]["connection"] == "close"
    assert json.loads(split(answer)[2])["message"].startswith("request body exceeds")


@pytest.mark.parametrize("chunks", [b"-3\r\nabc\r\n0\r\n\r\n", b"3\r\nabcdef\r\n0\r\n\r\n"])
def test_a_malformed_chunked_body_without_a_proxy_is_a_400_that_closes(
    alone: Server, chunks: bytes
) -> None:
    head = b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Type: text/csv\r\n"
    with socket.create_connection(("127.0.0.1", alone.port), timeout=10) as sock:
        sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
        answer = read_to_close(sock)  # the server closes: where a next request starts is unknown
    assert_json_error(answer, 400)
    assert split(answer)[1]["connection"] == "close"
    assert json.loads(split(answer)[2])["message"].startswith("malformed chunked request body")


def test_sigterm_lets_an_in_flight_request_finish(xgb_model_dir: Path, tmp_path: Path) -> None:
    with running_server(tmp_path, env_for(xgb_model_dir, "nginx")) as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        head = "POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Type: text/csv\r\n"
        sock.sendall(f"{head}Content-Length: {len(ROW)}\r\nConnection: close\r\n\r\n".encode())
        sock.sendall(ROW[:5])
        time.sleep(0.3)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        sock.sendall(ROW[5:])
        status, _, body = split(read_to_close(sock))
        sock.close()
        assert (status, float(body) > 0) == (200, True)
        assert server.wait(timeout_s=30) == 0


@pytest.mark.parametrize("victim", ["nginx", "gunicorn"])
def test_the_server_exits_non_zero_when_a_child_dies(
    xgb_model_dir: Path, tmp_path: Path, victim: str
) -> None:
    with running_server(tmp_path, env_for(xgb_model_dir, "nginx")) as server:
        os.kill(child_pid(server.process.pid, victim), signal.SIGKILL)
        assert server.wait(timeout_s=30) != 0
        assert "exited unexpectedly" in server.output()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()


def child_pid(parent: int, name: str) -> int:
    """The pid of ``parent``'s direct child whose command line names ``name``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        is_nginx = command.startswith(b"nginx") or b"/nginx\x00" in command
        if ppid == parent and (is_nginx if name == "nginx" else not is_nginx):
            return int(entry.name)
    raise AssertionError(f"no {name} child of {parent}")


def test_gunicorn_alone_is_still_a_choice(alone: Server) -> None:
    connection = alone.connection()
    connection.request("GET", "/ping")
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Server") != "nginx"
    connection.close()


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Bad: a\x00b\r\n\r\n", 400),
        (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414),
        (b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
        (b"POST /invocations HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    ],
)
def test_gunicorn_alone_answers_its_own_errors_in_json(
    alone: Server, request_bytes: bytes, status: int
) -> None:
    assert_json_error(raw(alone, request_bytes), status)
