"""The connection-level cases of hostile.py: clients that never read their large answers, and
floods of idle connections, each timing a normal request while the attack holds."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable

from bench.hostile.hostile_case import ROW, Outcome, send
from bench.hostile.hostile_wire import exchange, request


def slow_readers(clients: int = 64, rows: int = 20_000) -> Callable[[int], Outcome]:
    """``clients`` connections each ask for a ~10 MB answer (k-means contributions of
    ``rows`` rows, as CSV) and never read it; a normal request is timed meanwhile."""
    body = b"0:1\n" * rows
    data = request(
        "POST",
        "/models/kmeans/invoke",
        body,
        {
            "Content-Type": "text/libsvm",
            "Accept": "text/csv",
            "X-Amzn-SageMaker-Custom-Attributes": "outputs=contributions",
        },
    )

    def run(port: int) -> Outcome:
        before = _kmeans_answers(port)[0]
        held = [_stalled(port, data) for _ in range(clients)]
        _until_answered(port, before + clients)  # the answers are made and wait in nginx
        try:
            return send(port, request("POST", "/models/xgboost/invoke", ROW.encode(),
                                      {"Content-Type": "text/csv"}))  # fmt: skip
        finally:
            for sock in held:
                sock.close()

    return run


_ANSWERED = re.compile(
    rb'^smserve_requests_total\{[^}]*model="kmeans"[^}]*status="200"\} (\d+)$', re.M
)


def _kmeans_answers(port: int) -> tuple[int, bool]:
    """(k-means answers given so far, whether the workers hold no request) from the metrics."""
    found = exchange(port, request("GET", "/metrics"))
    page = found[0].body if found else b""
    return sum(int(n) for n in _ANSWERED.findall(page)), b"\nsmserve_requests_in_flight 0\n" in page


def _until_answered(port: int, count: int, timeout_s: float = 120.0) -> None:
    """Until ``count`` k-means answers are made and the workers hold nothing, at most
    ``timeout_s``: computing the held answers is queued work; what is timed after it is
    whether answers nobody reads still hold a worker."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answered, idle = _kmeans_answers(port)
        if answered >= count and idle:
            return
        time.sleep(0.25)


def idle_flood(connections: int = 1000) -> Callable[[int], Outcome]:
    """``connections`` connections that send nothing (and some half a header line)."""

    def run(port: int) -> Outcome:
        held = []
        for index in range(connections):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            if index % 2:
                sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Ty")
            held.append(sock)
        time.sleep(1)
        try:
            return send(port, request("POST", "/invocations", ROW.encode(),
                                      {"Content-Type": "text/csv"}))  # fmt: skip
        finally:
            for sock in held:
                sock.close()

    return run


def _stalled(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never read
    sock.sendall(data)
    return sock
