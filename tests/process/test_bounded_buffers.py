"""What big answers and big bodies cost the real front end, read from /proc.

* Clients that request ~10 MB answers and never read them: nginx holds at most
  SMSERVE_RESPONSE_BUFFER_KB of each in memory (the rest waits in a temp file), the workers
  are free for other clients at once, and a held answer is still whole when finally read.
* A body past nginx's in-memory share (an asynchronous-inference-sized payload) waits in a
  temp file, reaches the worker whole, and the worker holds one copy of it, not two."""

from __future__ import annotations

import io
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.process.servers import Server, running_server

pytestmark = pytest.mark.process

MIB = 2**20
ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"
UNREAD = 8
REQUEST_BUFFER_KB = 1024
RESPONSE_BUFFER_KB = 512


def csv_rows(n: int, seed: int = 0) -> bytes:
    values = np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)
    text = io.StringIO()
    np.savetxt(text, values, fmt="%.4f", delimiter=",")
    return text.getvalue().encode()


def request_bytes(
    body: bytes, content_type: str = "text/csv", accept: str = "application/json", extra: str = ""
) -> bytes:
    head = (
        "POST /invocations HTTP/1.1\r\nHost: t\r\n"
        f"Content-Type: {content_type}\r\nAccept: {accept}\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def read_answer(sock: socket.socket) -> tuple[int, bytes]:
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(
        next(
            line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        ).split(b":")[1]
    )
    while len(body) < length:
        chunk = sock.recv(1 << 20)
        assert chunk, "closed early"
        body += chunk
    return int(head.split()[1]), body


def small_window_connection(port: int) -> socket.socket:
    """A connection whose 4 KiB receive buffer is set before it connects. Set after, the
    window scale is already agreed for the default buffer, and once the buffer grows again the
    window reopens a few KiB per delayed ACK: reading an 11 MB answer then took five minutes
    (0.04 s when set before, measured with a plain TCP sender)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    return sock


def wait_until_answered(server: Server, count: int) -> None:
    """Until the workers have answered ``count`` invocations and hold none in flight."""
    pattern = re.compile(
        rb'^smserve_requests_total\{door="sagemaker",model="model",.*status="200"\} (\d+)$', re.M
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        connection = server.connection()
        connection.request("GET", "/metrics")
        page = connection.getresponse().read()
        connection.close()
        answered = sum(int(n) for n in pattern.findall(page))
        if answered >= count and b"\nsmserve_requests_in_flight 0\n" in page:
            time.sleep(1)  # the last answer's bytes reach nginx
            return
        time.sleep(0.5)
    raise AssertionError(f"fewer than {count} answers after 180 s")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def command_of(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def nginx_pids(server: Server) -> list[int]:
    master = next(p for p in children(server.process.pid) if b"nginx" in command_of(p))
    return [master, *children(master)]


def worker_pids(server: Server) -> list[int]:
    master = next(p for p in children(server.process.pid) if b"nginx" not in command_of(p))
    return children(master)


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(field)


def rss(pids: list[int]) -> int:
    return sum(status_kib(pid, "VmRSS") for pid in pids) * 1024


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux 4.0+)


@pytest.fixture(scope="module")
def server(xgb_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        "SM_MODEL_DIR": str(xgb_model_dir),
        "SMSERVE_FRONTEND": "nginx",
        "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
        "SAGEMAKER_MAX_PAYLOAD_IN_MB": "300",
        "SMSERVE_REQUEST_BUFFER_KB": str(REQUEST_BUFFER_KB),
        "SMSERVE_RESPONSE_BUFFER_KB": str(RESPONSE_BUFFER_KB),
    }
    with running_server(tmp_path_factory.mktemp("logs"), env) as started:
        yield started


def test_unread_answers_cost_nginx_a_bounded_buffer_each(server: Server) -> None:
    # ~4.5 MB of CSV in, ~11 MB of JSON out; approximate contributions are as wide as exact ones
    # and 20x cheaper to compute, and the test is about answers held, not about computing them
    body = csv_rows(150_000)
    big = request_bytes(body, extra=f"{ATTRIBUTES}: outputs=approximate_contributions\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as warm:
        warm.sendall(big)
        status, expected = read_answer(warm)
    assert status == 200
    assert len(expected) > 8 * MIB
    nginx = nginx_pids(server)
    before = rss(nginx)
    unread = [small_window_connection(server.port) for _ in range(UNREAD)]
    for sock in unread:
        sock.sendall(big)
    wait_until_answered(server, 1 + UNREAD)  # every answer is in nginx's hands
    grown = rss(nginx) - before
    try:
        # a normal client is answered at once: the workers hold none of the unread answers
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as normal:
            normal.sendall(request_bytes(b"0.1,0.2,0.3,0.4\n"))
            assert read_answer(normal)[0] == 200
        assert time.monotonic() - started < 5
        unread[0].settimeout(60)
        unread[0].setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)  # full speed now
        assert read_answer(unread[0]) == (200, expected)  # held whole, in memory and on disk
    finally:
        for sock in unread:
            sock.close()
    # each: at most its body's and its answer's buffers (plus nginx's own small state)
    per_request = (REQUEST_BUFFER_KB + RESPONSE_BUFFER_KB) * 1024 + 256 * 1024
    assert grown < UNREAD * per_request + 8 * MIB, grown / MIB


def test_a_large_body_waits_on_disk_and_the_worker_holds_one_copy(server: Server) -> None:
    size = 200 * MIB
    nginx, workers = nginx_pids(server), worker_pids(server)
    for pid in [*nginx, *workers]:
        reset_peak(pid)
    before = {pid: status_kib(pid, "VmRSS") for pid in workers}
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as sock:
        sock.sendall(request_bytes(b"x" * size, content_type="image/png"))
        status, answer = read_answer(sock)
    assert status == 415  # the worker read the whole body before refusing its type
    nginx_peak = max(status_kib(pid, "VmHWM") - status_kib(pid, "VmRSS") for pid in nginx)
    worker_peak = max(status_kib(pid, "VmHWM") - before[pid] for pid in workers) * 1024
    assert nginx_peak * 1024 < 32 * MIB
    assert 0.8 * size < worker_peak < 1.5 * size, worker_peak / MIB


def test_a_body_read_from_nginx_s_temp_file_gives_the_same_answer(server: Server) -> None:
    body = csv_rows(600_000, seed=1)  # ~18 MB: past what nginx keeps in memory
    assert len(body) > 9 * REQUEST_BUFFER_KB * 1024
    half = body.index(b"\n", len(body) // 2) + 1
    answers = []
    for part in (body, body[:half], body[half:]):
        with socket.create_connection(("127.0.0.1", server.port), timeout=120) as sock:
            sock.sendall(request_bytes(part, accept="text/csv"))
            status, answer = read_answer(sock)
        assert status == 200
        answers.append(answer)
    whole, first, second = answers
    assert whole == first + second
