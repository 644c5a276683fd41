"""Start the real ``smserve serve`` (gunicorn master + gthread workers) on a free port, wait for
/ping, and always stop it. Every wait is bounded; the server's output goes to a log file."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SMSERVE = Path(sys.executable).with_name("smserve")
START_TIMEOUT_S = 90.0  # two shared cores; a worker imports xgboost and loads the model
STOP_TIMEOUT_S = 30.0


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def connection(self, timeout_s: float = 20.0) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout_s)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        return self.process.wait(timeout=timeout_s)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def server_env(port: int, extra: Mapping[str, str]) -> dict[str, str]:
    """The test's environment without serving variables, plus one worker on ``port``."""
    prefixes = ("SAGEMAKER_", "SMSERVE_", "SM_", "OMP_", "MAX_CONTENT_LENGTH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    defaults = {"SAGEMAKER_BIND_TO_PORT": str(port), "SAGEMAKER_MODEL_SERVER_WORKERS": "1"}
    return {**env, **defaults, **extra}


def run_cli(
    args: Sequence[str], env: Mapping[str, str], timeout_s: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``smserve`` to completion (for commands expected to exit by themselves)."""
    command = [str(SMSERVE), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)


@contextlib.contextmanager
def running_server(
    log_dir: Path, env: Mapping[str, str], command: Sequence[str] | None = None
) -> Iterator[Server]:
    """A started, ready server; stopped (SIGTERM, then SIGKILL) on the way out."""
    port = free_port()
    log = log_dir / f"server-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            list(command or [str(SMSERVE), "serve"]),
            env=server_env(port, env),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() can reach the workers
        )
    server = Server(process, port, log)
    try:
        wait_until_ready(server)
        yield server
    finally:
        stop(server.process)


def wait_until_ready(server: Server, timeout_s: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"server exited {server.process.returncode}:\n{server.output()}")
        if ping(server) == 200:
            return
        time.sleep(0.1)
    raise AssertionError(f"server not ready after {timeout_s}s:\n{server.output()}")


def ping(server: Server) -> int | None:
    connection = server.connection(timeout_s=2.0)
    try:
        connection.request("GET", "/ping")
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT_S)
