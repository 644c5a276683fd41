"""A real `smserve serve` through nginx, watched from outside: its log, its gunicorn worker
pids (for restarts) and their resident memory (from /proc). Used by fuzz.py and soak.py.

Process tree: the supervisor forks the gunicorn master and the nginx master; the gunicorn
workers are the master's children. Linux only (reads /proc)."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.shared import harness

START_TIMEOUT_S = 120.0  # two shared cores: each worker imports xgboost and loads the model
STOP_TIMEOUT_S = 30.0
BOOTING = "Booting worker with pid"


@dataclass
class Proxied:
    """One started server: its supervisor process, port and log file."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def boots(self) -> int:
        """How many times gunicorn has booted a worker so far (initial ones included)."""
        return self.output().count(BOOTING)

    def worker_pids(self) -> list[int]:
        """The gunicorn workers (with SMSERVE_FRONTEND=gunicorn the master is the process)."""
        kids = children(self.process.pid)
        if not any(_is_nginx(pid) for pid in kids):
            return sorted(kids)
        masters = [pid for pid in kids if not _is_nginx(pid)]
        return sorted(pid for master in masters for pid in children(master))


def children(parent: int) -> list[int]:
    """Direct children of ``parent`` (of every thread of it), from /proc; [] once it has gone."""
    found = []
    for task in Path(f"/proc/{parent}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _is_nginx(pid: int) -> bool:
    try:
        return b"nginx" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\x00")[0]
    except OSError:
        return False


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (VmRSS), 0 once it has gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1])


@contextlib.contextmanager
def proxied(
    model_dir: Path, log: Path, workers: int, env: Mapping[str, str] | None = None
) -> Iterator[Proxied]:
    """`smserve serve` through nginx on a free loopback port until the block ends."""
    with starting(model_dir, log, workers, env) as server:
        wait_ready(server)
        yield server


@contextlib.contextmanager
def starting(
    model_dir: Path, log: Path, workers: int, env: Mapping[str, str] | None = None
) -> Iterator[Proxied]:
    """Started but not yet waited for (start several, then wait for each); always stopped."""
    port = harness.free_port()
    environ = _environ(model_dir, port, workers, env or {})
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [harness.SMSERVE, "serve"],
            env=environ,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, so stop() reaches every child
        )
    try:
        yield Proxied(process, port, log)
    finally:
        stop(process)


def _environ(model_dir: Path, port: int, workers: int, env: Mapping[str, str]) -> dict[str, str]:
    prefixes = ("SAGEMAKER_", "SMSERVE_", "SM_", "MAX_CONTENT_LENGTH")
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    serving = {
        "SM_MODEL_DIR": str(model_dir),
        "SAGEMAKER_BIND_TO_PORT": str(port),
        "SAGEMAKER_MODEL_SERVER_WORKERS": str(workers),
        "SMSERVE_FRONTEND": "nginx",  # fail rather than quietly test gunicorn alone
    }
    return {**inherited, **serving, **env}


def wait_ready(server: Proxied) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"smserve exited {server.process.returncode}:\n{server.output()}")
        if _ping(server.port) == 200:
            return
        time.sleep(0.1)
    raise RuntimeError(f"smserve not ready after {START_TIMEOUT_S:.0f} s:\n{server.output()}")


def _ping(port: int) -> int | None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/ping")
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_TIMEOUT_S)
