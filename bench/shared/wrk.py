"""wrk, a C load generator, against one POST request: latency percentiles and requests/s.

Why wrk: a Python client eats most of the second core on this 2-vCPU machine, so it measures
itself; wrk costs a few microseconds a request. Latency is wrk's ``--latency`` percentiles
(p50/p99 over every request of the run), throughput its requests/s. Any non-2xx answer fails
the run: a broken server cannot post a figure. Debian's package is installed when missing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SCRIPT = 'wrk.method = "POST"\nwrk.body = {body}\nwrk.headers["Content-Type"] = "{ctype}"\n'
GET_SCRIPT = 'wrk.method = "GET"\n'
UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
TIMEOUT = "10s"  # a request slower than this counts as a socket error


@dataclass(frozen=True)
class Request:
    """A POST of ``body``; a GET where ``method`` says so (no body)."""

    path: str
    body: bytes
    content_type: str
    method: str = "POST"


@dataclass
class Cell:
    """One wrk run: p50 and p99 in ms, requests/s, and socket errors (connect, read, write,
    timeout together)."""

    p50_ms: float
    p99_ms: float
    rps: float
    socket_errors: int = 0


def ensure_installed() -> None:
    if shutil.which("wrk"):
        return
    print("wrk missing: apt-get install wrk", flush=True)
    for attempt in range(30):  # another engineer may hold apt's lock
        done = subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False)
        if done.returncode == 0 and shutil.which("wrk"):
            return
        subprocess.run(["apt-get", "update", "-qq"], check=False)
        time.sleep(min(2 + attempt, 10))
    raise SystemExit("could not install wrk")


def run(
    port: int,
    request: Request,
    connections: int,
    seconds: int,
    scratch: Path,
    prefix: Sequence[str] = (),
) -> Cell:
    """``connections`` keep-alive connections (over at most 2 threads) for ``seconds``;
    ``prefix`` runs wrk under another command (``taskset -c 0``)."""
    script = scratch / "post.lua"
    body = json.dumps(request.body.decode())
    text = SCRIPT.format(body=body, ctype=request.content_type)
    script.write_text(GET_SCRIPT if request.method == "GET" else text)
    threads = min(2, connections)
    command = [
        *prefix,
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        TIMEOUT,
    ]
    url = f"http://127.0.0.1:{port}{request.path}"
    command += ["--latency", "-s", str(script), url]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in output:
        raise RuntimeError(f"wrk saw error answers:\n{output}")
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    assert rps is not None, output
    p50, p99 = _percentile(output, "50%"), _percentile(output, "99%")
    return Cell(p50, p99, float(rps.group(1)), _socket_errors(output))


def _percentile(output: str, label: str) -> float:
    found = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", output)
    assert found is not None, output
    return float(found.group(1)) * UNITS[found.group(2)]


def _socket_errors(output: str) -> int:
    found = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    return sum(int(n) for n in found.groups()) if found else 0
