"""bench/fuzz/fuzz.py as part of the suite: a 5,000-request sample against real proxied servers
(XGBoost and k-means through nginx), and its detectors against a server that misbehaves on
purpose (a desync after a keep-alive answer, a 5xx, a non-JSON error)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.fuzz import fuzz

pytestmark = pytest.mark.process

FUZZ = Path(__file__).resolve().parents[2] / "bench" / "fuzz" / "fuzz.py"
SAMPLE = 5000
# Starting its servers (models trained, nginx and gunicorn up) is most of the run: on a busy
# machine that alone took over 3 minutes.
RUN_TIMEOUT_S = 480


def test_a_fuzz_sample_breaks_no_invariant() -> None:
    command = [sys.executable, str(FUZZ), "--count", str(SAMPLE), "--seed", "7"]
    command += ["--seconds", "60", "--clients", "4", "--workers", "1"]
    done = _run_stopping_cleanly(command, timeout_s=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert f"fuzz: {SAMPLE} requests" in done.stdout, done.stdout
    assert "answers >= 500: 0" in done.stdout
    assert "connections dropped after a keep-alive answer: 0" in done.stdout
    assert "worker restarts: 0" in done.stdout


def _run_stopping_cleanly(command: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``command``; past ``timeout_s`` interrupt it (SIGINT: its context managers stop the
    servers it started, each in a process group of its own) before failing."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
        pytest.fail(
            f"fuzz.py did not finish within {timeout_s} s:\n{stdout[-4000:]}{stderr[-4000:]}"
        )
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


BROKEN = (  # answered in turn, one per connection; each then closes without saying so
    b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\n<h1>",
)


@pytest.fixture
def broken_port() -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=_answer_once_each, args=(listener,), daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    listener.close()
    thread.join(timeout=5)


def _answer_once_each(listener: socket.socket) -> None:
    for answer in BROKEN:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            received = b""
            while b"\r\n\r\n" not in received and (chunk := connection.recv(65536)):
                received += chunk
            connection.sendall(answer)


def test_the_fuzzer_sees_a_desync_a_5xx_and_an_html_error(broken_port: int) -> None:
    tally = fuzz.Tally()
    session = fuzz.Session(broken_port, tally)
    for _ in range(3):  # answered (bad envelope), dropped on reuse, answered 502 in HTML
        session.send(fuzz.kinds.Fuzzed("route", method="GET", path="/ping", framing="none"))
    session.close()
    assert tally.failures == {
        "error answers not the JSON envelope": 2,
        "connections dropped after a keep-alive answer": 1,
        "answers >= 500": 1,
    }
