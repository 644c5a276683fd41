"""The processes of ``multihost.py``: each host's ``/opt/ml`` tree, and ``smserve train`` run
as one process per tree, pinned to a CPU of its own, with its wall time, its logged training
time (for k-means also the part before its first mini-batch step), its largest peak RSS, and
the CPU time of all its hosts, user and kernel apart."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

HOSTS = ("127.0.0.2", "127.0.0.3")
N_FEATURES = 50
PARQUET = "application/x-parquet"
FIRST_STEP = "mini-batch k-means with"  # logged once the hosts have met, before the first step


def write_parquet(path: Path, features: np.ndarray, labels: np.ndarray) -> None:
    columns = {"label": labels, **{f"f{j}": features[:, j] for j in range(N_FEATURES)}}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, row_group_size=100_000)


def layout(
    base: Path, hyperparameters: Mapping[str, str], hosts: Sequence[str], current: str
) -> None:
    config = base / "input" / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hyperparameters.json").write_text(json.dumps(dict(hyperparameters)))
    channel = {"ContentType": PARQUET, "S3DistributionType": "ShardedByS3Key"}
    (config / "inputdataconfig.json").write_text(json.dumps({"train": channel}))
    resource = {"current_host": current, "hosts": list(hosts), "network_interface_name": "lo"}
    (config / "resourceconfig.json").write_text(json.dumps(resource))


# ``smserve train`` as its console script runs it, and at its exit the host's own VmHWM (kB)
# written to $SMSERVE_BENCH_PEAK_FILE. A high-water mark read from this process every few ms
# instead would wake on one of the two CPUs: where both hosts are pinned, it takes a host's
# CPU, and the hosts, in lockstep, all wait for it; the one-host job would keep the other CPU
# free for it. (wait4's ru_maxrss would count this process's memory too: a child's high-water
# mark starts before it execs.)
TRAIN_REPORTING_PEAK = """
import atexit, os, sys
def _peak():
    with open("/proc/self/status") as status:
        peak = status.read().split("VmHWM:")[1].split()[0]
    with open(os.environ["SMSERVE_BENCH_PEAK_FILE"], "w") as out:
        out.write(peak)
atexit.register(_peak)
from smserve.cli import main
sys.argv[0] = "smserve"
sys.exit(main())
"""


def compiled_as_installed() -> None:
    """smserve's byte code written once, as ``pip install`` and the image write it: an
    editable install under PYTHONDONTWRITEBYTECODE (this project's sandbox) would otherwise
    compile every smserve module again in each process, which no installed job pays."""
    import compileall

    import smserve

    package = Path(smserve.__file__).parent
    if not compileall.compile_dir(package, quiet=1, legacy=False):
        raise SystemExit(f"could not compile {package}")


def free_tracker_ports() -> int:
    """A port p such that p and p + 1 (the tracker's two meetings) are free on the master's
    address now: each job gets its own, since a port an earlier job's tracker used stays in
    TIME_WAIT for a minute and XGBoost's tracker does not bind over it."""
    while True:
        with socket.socket() as probe:
            probe.bind((HOSTS[0], 0))
            port = int(probe.getsockname()[1])
        with socket.socket() as second:
            try:
                second.bind((HOSTS[0], port + 1))
            except OSError:
                continue
        return port


def run_job(bases: Sequence[Path], port: int = 0) -> Times:
    """Start one pinned ``smserve train`` per base (CPU i for base i); the wall time, the
    training time from the logs (first "training ... on channels" to the last line of any
    host: without the interpreter's start and imports, which a loaded machine stretches), the
    largest peak RSS of a host in MB, and the user and kernel CPU time of all hosts (this
    process's reaped children: the jobs run one at a time). ``port`` 0: free tracker ports of
    its own."""
    port = port or free_tracker_ports()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    processes = []
    for cpu, base in enumerate(bases):
        env = {
            **os.environ,
            "SMSERVE_TRAINING_BASE_DIR": str(base),
            "SMSERVE_TRACKER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
            "SMSERVE_BENCH_PEAK_FILE": str(base / "peak_kb"),
        }
        command = [
            "taskset",
            "-c",
            str(cpu),
            sys.executable,
            "-P",
            "-c",
            TRAIN_REPORTING_PEAK,
            "train",
        ]
        with (base / "train.log").open("w") as log:  # the child keeps its own copy
            processes.append(
                subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
            )
    codes = [p.wait(timeout=3600) for p in processes]
    elapsed = time.perf_counter() - started
    if any(codes):
        logs = [(b / "train.log").read_text()[-2000:] for b in bases]
        raise SystemExit(f"training failed {codes}:\n" + "\n".join(logs))
    span, first_step = _logged_span([(b / "train.log").read_text() for b in bases])
    peak_kb = max(int((b / "peak_kb").read_text()) for b in bases)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the hosts, all reaped by now
    user, kernel = used.ru_utime - cpu_before.ru_utime, used.ru_stime - cpu_before.ru_stime
    return elapsed, span, peak_kb / 1024, first_step, user, kernel


def _logged_span(logs: Sequence[str]) -> tuple[float, float]:
    """From the first host's "training ... on channels" to the last line of any host; and
    from there to the last host's first k-means step (``FIRST_STEP``; NaN for XGBoost)."""
    starts, ends, first_steps = [], [], []
    for log in logs:
        stamps = [_stamp(line) for line in log.splitlines() if _stamp(line)]
        started = [_stamp(line) for line in log.splitlines() if " on channels " in line]
        starts.append(min(s for s in started if s) if started else min(stamps))
        ends.append(max(stamps))
        stepping = [_stamp(line) for line in log.splitlines() if FIRST_STEP in line]
        first_steps.append(min(stepping) if stepping else float("nan"))
    return max(ends) - min(starts), max(first_steps) - min(starts)


def _stamp(line: str) -> float:
    try:
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return 0.0


def prepare(
    work: Path,
    name: str,
    hyperparameters: Mapping[str, str],
    parts: Sequence[tuple[np.ndarray, np.ndarray]],
) -> list[Path]:
    """One tree per host (one host alone: hosts = [HOSTS[0]]) holding its part of the rows."""
    hosts = HOSTS[: len(parts)]
    bases = []
    for host, (features, labels) in zip(hosts, parts, strict=True):
        base = work / name / host
        layout(base, hyperparameters, hosts, host)
        write_parquet(base / "input" / "data" / "train" / "part.parquet", features, labels)
        bases.append(base)
    return bases


# wall, logged training, largest host's peak RSS (MB), logged time before the first k-means step,
# user and kernel CPU time of all hosts together (s)
Times = tuple[float, float, float, float, float, float]
