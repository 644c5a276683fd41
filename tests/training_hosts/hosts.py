"""A multi-host training job on loopback: one real ``smserve train`` process per host, each with
its own /opt/ml tree under ``tmp_path`` (``SMSERVE_TRAINING_BASE_DIR``) and its own
``resourceconfig.json``; hosts are named by loopback addresses (127.0.0.2, 127.0.0.3, ...),
which need no name resolution. Each host runs under strace, which records every bind and
connect of its process (``syscalls.py``), so the tests can check where every socket was."""

from __future__ import annotations

import io
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import pytest

from .syscalls import SocketCall, socket_calls, traced

JOB_TIMEOUT_S = 120.0
# Short, so that a host that never joins ends the job soon, yet long enough for a loaded
# machine's slowest host to import and read its data before the first gives up on it.
COLLECTIVE_TIMEOUT_S = 30
POLL_S = 0.05
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


def host_names(count: int) -> list[str]:
    return [f"127.0.0.{i + 2}" for i in range(count)]


def free_port(address: str) -> int:
    """A port free on ``address`` now."""
    with socket.socket() as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


def free_port_pair(address: str) -> int:
    """A port free on ``address`` with the next one free too (the training group's)."""
    for _ in range(50):
        port = free_port(address)
        if port < 65535 and _free(address, port + 1):
            return port
    raise RuntimeError("no free pair of ports")


def _free(address: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


def smserve() -> list[str]:
    script = Path(sys.executable).with_name("smserve")
    found = str(script) if script.is_file() else shutil.which("smserve")
    if found is None:
        pytest.skip("the smserve console script is not installed")
    return [found]


IMPORTS_LISTED = {"PYTHONPROFILEIMPORTTIME": "1"}  # Python prints each import to stderr


def imported(output: str, module: str) -> bool:
    """Whether a host started with IMPORTS_LISTED imported ``module`` (an import that failed is
    listed too: ask for a submodule to learn whether a package loaded)."""
    lines = output.splitlines()
    listed = (line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:"))
    return module in listed


def csv_text(features: np.ndarray, labels: np.ndarray | None) -> str:
    table = features if labels is None else np.column_stack([labels, features])
    buffer = io.StringIO()
    np.savetxt(buffer, table, delimiter=",", fmt="%.9g")
    return buffer.getvalue()


@dataclass
class Host:
    name: str
    base: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        """The host's stdout and stderr: a file, which never fills up as a pipe would."""
        return self.base.parent / "output.log"

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @property
    def syscalls(self) -> Path:
        return self.base.parent / "sockets.strace"

    def sockets(self) -> list[SocketCall]:
        return socket_calls(self.syscalls) if self.syscalls.exists() else []

    @property
    def failure_file(self) -> Path:
        return self.base / "output" / "failure"

    @property
    def failure(self) -> str:
        return self.failure_file.read_text(encoding="utf-8") if self.failure_file.exists() else ""

    @property
    def model_dir(self) -> Path:
        return self.base / "model"

    def model_files(self) -> list[str]:
        return sorted(p.name for p in self.model_dir.glob("*")) if self.model_dir.is_dir() else []


@dataclass
class Job:
    """The hosts of one job; ``write`` sets up a host's tree, ``start``/``wait`` run them."""

    root: Path
    names: Sequence[str]
    hyperparameters: Mapping[str, str]
    distribution: str = "ShardedByS3Key"
    port: int = 0
    hosts: dict[str, Host] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.port = self.port or free_port_pair(self.names[0])
        for name in self.names:
            self.hosts[name] = Host(name, self.root / name / "opt_ml")
            self._config(self.hosts[name])

    def _config(self, host: Host) -> None:
        config = host.base / "input" / "config"
        config.mkdir(parents=True, exist_ok=True)
        resource = {
            "current_host": host.name,
            "hosts": list(self.names),
            "network_interface_name": "lo",
        }
        (config / "resourceconfig.json").write_text(json.dumps(resource))
        (config / "hyperparameters.json").write_text(json.dumps(dict(self.hyperparameters)))

    def data(self, host: str, channel: str, files: Mapping[str, str], content_type: str) -> None:
        """Write ``files`` as ``host``'s part of ``channel``."""
        base = self.hosts[host].base
        folder = base / "input" / "data" / channel
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        path = base / "input" / "config" / "inputdataconfig.json"
        config = json.loads(path.read_text()) if path.exists() else {}
        config[channel] = {
            "ContentType": content_type,
            "TrainingInputMode": "File",
            "S3DistributionType": self.distribution,
        }
        path.write_text(json.dumps(config))

    def start(self, names: Sequence[str] | None = None, **environ: str) -> None:
        for name in names or self.names:
            host = self.hosts[name]
            env = {
                **os.environ,
                "SMSERVE_TRAINING_BASE_DIR": str(host.base),
                "SMSERVE_TRACKER_PORT": str(self.port),
                "SMSERVE_COLLECTIVE_TIMEOUT_S": str(COLLECTIVE_TIMEOUT_S),
                "SMSERVE_HOST_RESOLVE_TIMEOUT_S": "5",
                "OMP_NUM_THREADS": "1",
                **environ,
            }
            with host.log.open("wb") as log:
                host.process = subprocess.Popen(
                    traced([*smserve(), "train"], host.syscalls),
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )

    def running(self) -> list[Host]:
        return [h for h in self.hosts.values() if h.process and h.process.poll() is None]

    def wait(self, timeout_s: float = JOB_TIMEOUT_S) -> dict[str, int]:
        """Each started host's exit status (strace's is its process's), once all have ended."""
        deadline = time.monotonic() + timeout_s
        while self.running() and time.monotonic() < deadline:
            time.sleep(POLL_S)
        for host in self.running():  # strace's child first: killing strace alone detaches it
            assert host.process is not None
            for child in psutil.Process(host.process.pid).children():
                child.kill()
            host.process.kill()
        statuses = {}
        for host in self.hosts.values():
            if host.process is not None:
                statuses[host.name] = host.process.wait(timeout=30)
        assert time.monotonic() < deadline, f"the job ran past {timeout_s} s: {statuses}"
        return statuses

    def wait_for_line(self, name: str, text: str, timeout_s: float = 60.0) -> None:
        """Wait until ``name``'s output holds ``text``."""
        host = self.hosts[name]
        assert host.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ended = host.process.poll() is not None
            if text in host.output:
                return
            if ended:
                break
            time.sleep(POLL_S)
        raise AssertionError(f"{name} never printed {text!r}:\n{host.output}")

    def kill(self, name: str) -> None:
        """SIGKILL to the host's ``smserve train`` process (strace's child)."""
        process = self.hosts[name].process
        assert process is not None
        (train,) = psutil.Process(process.pid).children()
        train.send_signal(signal.SIGKILL)

    def assert_loopback_only(self) -> None:
        """Every bind and every connect of every host, as strace recorded them: each bind on
        that host's own address (never the wildcard), the tracker's on the master's, and each
        connection to an address of this job's hosts, all on 127.0.0.0/8."""
        seen = {name: host.sockets() for name, host in self.hosts.items() if host.process}
        assert any(seen.values()), "no socket was recorded"
        master = self.names[0]
        if self.hosts[master].process:
            tracker = SocketCall("bind", master, self.port)
            assert tracker in seen[master], seen[master]
        for name, calls in seen.items():
            for call in calls:
                assert ipaddress.ip_address(call.address) in LOOPBACK, f"{name}: {call}"
                if call.call == "bind":
                    assert call.address == name, f"{name} bound a socket elsewhere: {call}"
                else:
                    assert call.address in self.names, f"{name} connected elsewhere: {call}"
