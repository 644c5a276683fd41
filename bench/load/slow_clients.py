"""Slow and stalled clients against a real server: 64 connections stall mid-headers or
mid-body while 8 normal keep-alive clients keep sending one-row CSV requests.

Reports the normal clients' p50/p99 and errors, and for each stalled connection how long after
its last byte the server answered it (408) or closed it, against the configured timeout.
``--frontend gunicorn`` runs the same against gunicorn alone, to show the freeze nginx removes.

    .venv/bin/python bench/load/slow_clients.py [--frontend nginx|gunicorn] [--stalled 64]
        [--clients 8] [--rate 50] [--timeout-s 10]

Normal clients are paced (``--rate`` requests per second each) so that on a 2-core machine the
clients themselves do not saturate the CPUs the server needs; each runs in its own process.

``--unread N`` runs the other slow client instead: N connections each ask for a large answer
(~``--answer-mb``: approximate contributions as JSON) and never read a byte of it; once they
are computed, the normal clients run while the answers are held. Reports the normal clients'
p50/p99 before and then, and the resident memory of nginx and of the workers (from /proc)
before and at its peak (see ``unread.py``). ``--src``
serves another tree (``PYTHONPATH``), e.g. the previous one, for a before/after comparison.

    .venv/bin/python bench/load/slow_clients.py --unread 64 [--answer-mb 10] [--src /tmp/prev/src]
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import select
import socket
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.load import unread  # noqa: E402
from bench.shared import harness  # noqa: E402

ROW = harness.csv_body(harness.rows(1))


def main() -> None:
    args = _arguments()
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = Path(scratch) / "model"
        harness.build_xgboost(model_dir)
        env = {
            "SMSERVE_FRONTEND": args.frontend,
            "SMSERVE_CLIENT_HEADER_TIMEOUT_S": str(args.timeout_s),
            "SMSERVE_CLIENT_BODY_TIMEOUT_S": str(args.timeout_s),
            **({"PYTHONPATH": args.src} if args.src else {}),
        }
        with harness.served(model_dir, workers=2, **env) as (port, process):
            if args.unread:
                unread.run(port, process.pid, args, _client)
            else:
                _run(port, args)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frontend", default="nginx", choices=("nginx", "gunicorn"))
    parser.add_argument("--stalled", type=int, default=64)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rate", type=float, default=50.0, help="requests/s per normal client")
    parser.add_argument("--timeout-s", type=int, default=10)
    parser.add_argument("--unread", type=int, default=0, help="clients that never read")
    parser.add_argument("--answer-mb", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=20.0, help="of the unread flood")
    parser.add_argument("--src", help="serve another tree's src directory instead")
    return parser.parse_args()


def _run(port: int, args: argparse.Namespace) -> None:
    duration = args.timeout_s + 3
    stalled = [_stall(port, mid_body=i % 2 == 1) for i in range(args.stalled)]
    stalled_at = time.monotonic()
    with multiprocessing.Pool(args.clients) as pool:
        pending = pool.starmap_async(_client, [(port, duration, args.rate)] * args.clients)
        ends = _watch(stalled, stalled_at, duration + 5)
        results = pending.get(timeout=duration + 30)
    samples = [ms for latencies, _ in results for ms in latencies]
    errors = sum(count for _, count in results)
    _report(args, samples, errors, ends)


def _stall(port: int, mid_body: bool) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    if mid_body:
        head = b"POST /invocations HTTP/1.1\r\nHost: b\r\nContent-Type: text/csv\r\n"
        sock.sendall(head + f"Content-Length: {len(ROW)}\r\n\r\n".encode() + ROW[:3])
    else:
        sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: b\r\nContent-Ty")
    return sock


def _watch(socks: list[socket.socket], since: float, limit_s: float) -> list[tuple[str, float]]:
    """(outcome, seconds after the stall) per socket: '408', 'closed' or 'open'."""
    outcome: dict[socket.socket, tuple[str, float]] = {}
    while len(outcome) < len(socks) and time.monotonic() - since < limit_s:
        waiting = [s for s in socks if s not in outcome]
        readable, _, _ = select.select(waiting, [], [], 0.05)
        for sock in readable:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                data = b""
            kind = "408" if data.startswith(b"HTTP/1.1 408") else "closed" if not data else "other"
            outcome[sock] = (kind, time.monotonic() - since)
    for sock in socks:
        sock.close()
    return [outcome.get(s, ("open", limit_s)) for s in socks]


def _client(port: int, duration_s: float, rate: float) -> tuple[list[float], int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    latencies, errors = [], 0
    deadline = time.monotonic() + duration_s
    interval = 1.0 / rate
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            conn.request("POST", "/invocations", body=ROW, headers={"Content-Type": "text/csv"})
            response = conn.getresponse()
            response.read()
            errors += response.status != 200
        except OSError:
            errors += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        latencies.append((time.perf_counter() - started) * 1000)
        time.sleep(max(0.0, interval - (time.perf_counter() - started)))
    return latencies, errors


def _report(
    args: argparse.Namespace, samples: list[float], errors: int, ends: list[tuple[str, float]]
) -> None:
    print(f"frontend={args.frontend} stalled={args.stalled} clients={args.clients}x{args.rate}/s")
    if samples:
        p50, p99 = harness.percentile(samples, 50), harness.percentile(samples, 99)
        print(
            f"normal requests: {len(samples)}, errors {errors}, p50 {p50:.2f} ms, p99 {p99:.2f} ms"
        )
    kinds = {
        kind: sum(1 for k, _ in ends if k == kind) for kind in ("408", "closed", "other", "open")
    }
    latest = max(t for _, t in ends)
    print(f"stalled connections: {kinds}; last one ended {latest:.2f} s after stalling")
    within = all(k in ("408", "closed") and t <= args.timeout_s + 1 for k, t in ends)
    print(f"every stalled request ended within timeout + 1 s ({args.timeout_s + 1} s): {within}")


if __name__ == "__main__":
    main()
