"""Ray for the benches, on loopback only: ``loopback_cluster`` is a two-node cluster started
here and stopped by PID, the tests' own (``tests/scoring/ray_cluster.py``, run as a script in
a process group of its own), so the bench measures the cluster the tests check (127.0.0.1
only, token authentication, a Ray temporary folder of its own: no other Ray user on the
machine is joined or disturbed). ``fresh_environment`` is the same settings for a command
that starts a fresh local cluster itself (``--address local``), which Ray would otherwise
bind to the machine's network address."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

HELPER = Path(__file__).resolve().parents[2] / "tests" / "scoring" / "ray_cluster.py"


@dataclass(frozen=True)
class Cluster:
    address: str
    environment: dict[str, str]

    def env(self) -> dict[str, str]:
        """This process's environment with the cluster's Ray settings."""
        return {**os.environ, **self.environment}


@contextlib.contextmanager
def fresh_environment() -> Iterator[dict[str, str]]:
    """This process's environment with the tests' Ray settings, in a folder removed after."""
    folder = Path(tempfile.mkdtemp(prefix="smserve-ray-", dir="/tmp"))
    try:
        yield {**os.environ, **_helper().environment(folder)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _helper() -> Any:
    """The tests' module, loaded from its file (``tests`` is not a package on sys.path)."""
    spec = importlib.util.spec_from_file_location("ray_cluster", HELPER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def loopback_cluster(cpus: int) -> Iterator[Cluster]:
    """A head and a second node of ``cpus`` logical CPUs each, running until the block ends."""
    helper = subprocess.Popen(
        [sys.executable, str(HELPER), str(cpus)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert helper.stdout is not None
        started = json.loads(helper.stdout.readline() or "null")
        if started is None:
            raise RuntimeError(f"the loopback Ray cluster did not start ({HELPER})")
        yield Cluster(started["address"], started["environment"])
    finally:
        _stop(helper)


def _stop(helper: subprocess.Popen[str]) -> None:
    """Closing its input makes the helper stop its cluster by handle; then any process of its
    process group still alive (its own, noted before, by PID) is killed."""
    group = [p for p in psutil.process_iter() if _group_of(p) == helper.pid]
    if helper.stdin is not None:
        helper.stdin.close()
    try:
        helper.wait(timeout=120)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()
    for process in group:
        with contextlib.suppress(psutil.NoSuchProcess):
            if process.is_running():  # the same process (psutil checks its start time)
                process.kill()


def _group_of(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None
