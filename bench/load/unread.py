"""``slow_clients.py --unread``: clients that ask for large answers and never read them.

Each unread connection sends one request whose answer is about ``--answer-mb`` (approximate
contributions of the 50-feature model, as JSON: cheap to compute, large to send) with a tiny
receive buffer, then nothing.
Once every unread answer has been computed (the workers answer 1-row requests quickly again),
the normal clients run for ``--seconds`` while the unread answers are held, and their latency
is compared with a run before the flood; the resident memory of nginx (master and worker) and
of the gunicorn workers is sampled from /proc every 250 ms.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import socket
import time
from collections.abc import Callable
from pathlib import Path

from bench.shared import harness
from bench.shared.proxied import children

MIB = 2**20
HEADERS = {
    "Content-Type": "text/csv",
    "Accept": "application/json",
    "X-Amzn-SageMaker-Custom-Attributes": "outputs=approximate_contributions",
}
Client = Callable[[int, float, float], tuple[list[float], int]]


def run(port: int, server_pid: int, args: argparse.Namespace, client: Client) -> None:
    body, answer = _calibrated(port, args.answer_mb)
    print(
        f"tree={args.src or 'this'} frontend={args.frontend} unread={args.unread} "
        f"answers of {answer / MIB:.1f} MB (bodies {len(body) / MIB:.1f} MB), "
        f"normal clients {args.clients}x{args.rate}/s"
    )
    nginx, workers = _roles(server_pid)
    before = (_rss(nginx), _rss(workers))
    baseline = _normal(port, args, client, 5.0)
    socks = [_unread(port, body) for _ in range(args.unread)]
    settled = _settle(port)  # every unread answer computed and handed over
    with multiprocessing.Pool(args.clients) as pool:
        pending = pool.starmap_async(client, [(port, args.seconds, args.rate)] * args.clients)
        peaks = _sample(nginx, workers, args.seconds)
        during = pending.get(timeout=args.seconds + 60)
    for sock in socks:
        sock.close()
    print(f"the unread answers were computed {settled:.1f} s after they were asked for")
    _report("before", baseline)
    _report("while the unread answers are held", during)
    for name, start, peak in (("nginx", before[0], peaks[0]), ("workers", before[1], peaks[1])):
        grown = peak - start
        print(
            f"{name} RSS: before {start / MIB:.1f} MiB, peak {peak / MIB:.1f} MiB "
            f"(+{grown / MIB:.1f} MiB, {grown / 1024 / max(1, args.unread):.0f} KiB per unread)"
        )


def _calibrated(port: int, answer_mb: float) -> tuple[bytes, int]:
    """A body whose answer is about ``answer_mb``, and that answer's size."""
    probe = _answer_size(port, harness.csv_body(harness.rows(200)))
    rows = max(1, int(answer_mb * MIB / (probe / 200)))
    body = harness.csv_body(harness.rows(rows))
    return body, _answer_size(port, body)


def _answer_size(port: int, body: bytes) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/invocations", body=body, headers=HEADERS)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
    return len(data)


def _normal(
    port: int, args: argparse.Namespace, client: Client, seconds: float
) -> list[tuple[list[float], int]]:
    with multiprocessing.Pool(args.clients) as pool:
        return pool.starmap(client, [(port, seconds, args.rate)] * args.clients)


def _unread(port: int, body: bytes) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    head = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
    request = f"POST /invocations HTTP/1.1\r\nHost: b\r\n{head}Content-Length: {len(body)}\r\n\r\n"
    sock.sendall(request.encode() + body)
    return sock


def _settle(port: int) -> float:
    """Seconds until three 1-row requests in a row take under 50 ms (the workers are free)."""
    started, quick = time.monotonic(), 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    while quick < 3:
        asked = time.monotonic()
        conn.request(
            "POST",
            "/invocations",
            body=harness.csv_body(harness.rows(1)),
            headers={"Content-Type": "text/csv"},
        )
        conn.getresponse().read()
        quick = quick + 1 if time.monotonic() - asked < 0.05 else 0
        time.sleep(0.1)
    conn.close()
    return time.monotonic() - started


def _sample(nginx: list[int], workers: list[int], seconds: float) -> tuple[int, int]:
    peaks = (0, 0)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        peaks = (max(peaks[0], _rss(nginx)), max(peaks[1], _rss(workers)))
        time.sleep(0.25)
    return peaks


def _report(phase: str, results: list[tuple[list[float], int]]) -> None:
    samples = [ms for latencies, _ in results for ms in latencies]
    errors = sum(count for _, count in results)
    p50, p99 = harness.percentile(samples, 50), harness.percentile(samples, 99)
    print(
        f"normal requests {phase}: {len(samples)}, errors {errors}, "
        f"p50 {p50:.2f} ms, p99 {p99:.2f} ms"
    )


def _roles(server_pid: int) -> tuple[list[int], list[int]]:
    """(nginx master and workers, gunicorn workers) under ``smserve serve``."""
    nginx, workers = [], []
    for child in children(server_pid):
        if b"nginx" in Path(f"/proc/{child}/cmdline").read_bytes():
            nginx = [child, *children(child)]
        else:
            workers = children(child)
    return nginx, workers or children(server_pid)  # gunicorn alone: the master is the server


def _rss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * 4096
        except OSError:
            continue
    return total
