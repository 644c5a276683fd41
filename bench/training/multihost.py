"""Two hosts with one CPU each against one host with one CPU: ``smserve train`` as real
processes on loopback (hosts 127.0.0.2 and 127.0.0.3, each pinned by ``taskset`` to its own
CPU; the one-host job on CPU 0), XGBoost ``hist`` and k-means on the same rows.

Data: ``--rows`` (default 1,000,000) x 50 float32 features as Parquet (label first), a binary
label from a noisy non-linear function; ``--held-out`` further rows score both XGBoost models
(AUC). The two-host job gets the rows as two ShardedByS3Key halves. k-means: k=10, the
default mini-batch size and centre factor, labels ignored. Each job also reports the peak
RSS of its largest host. The collective's set-up is measured apart:
the same jobs on 1,000 rows, two hosts minus one host (two meetings: census and training).

smserve's byte code is compiled first, as an installed package has it.
k-means and the set-up run ``--repeats`` times (default 7), the one-host and two-host jobs in
alternating order (one first, then two first, ...), and report medians with their range: a
job's time depends on what ran just before it (the kernel's free huge pages, which the job
before leaves behind), so a fixed order would favour one side. XGBoost runs once.

    nice .venv/bin/python bench/training/multihost.py [--rows N] [--rounds 100] [--repeats 7]
        [--only xgboost|kmeans] [--work DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
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


def make_rows(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_rows, N_FEATURES)).astype(np.float32)
    signal = features[:, 0] + features[:, 1] * features[:, 2] - np.abs(features[:, 3])
    labels = (signal + rng.normal(0, 1.0, n_rows) > 0).astype(np.float32)
    return features, labels


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


def smserve() -> str:
    script = Path(sys.executable).with_name("smserve")
    return str(script) if script.is_file() else "smserve"


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


def run_job(bases: Sequence[Path], port: int = 0) -> tuple[float, float, float]:
    """Start one pinned ``smserve train`` per base (CPU i for base i); the wall time, the
    training time from the logs (first "training ... on channels" to the last line of any
    host: without the interpreter's start and imports, which a loaded machine stretches), and
    the largest peak RSS of a host in MB. ``port`` 0: free tracker ports of
    its own."""
    port = port or free_tracker_ports()
    started = time.perf_counter()
    processes = []
    for cpu, base in enumerate(bases):
        env = {
            **os.environ,
            "SMSERVE_TRAINING_BASE_DIR": str(base),
            "SMSERVE_TRACKER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
        }
        log = (base / "train.log").open("w")
        command = ["taskset", "-c", str(cpu), smserve(), "train"]
        processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
    peak_kb = _peak_while_running(processes)
    codes = [p.wait(timeout=3600) for p in processes]
    elapsed = time.perf_counter() - started
    if any(codes):
        logs = [(b / "train.log").read_text()[-2000:] for b in bases]
        raise SystemExit(f"training failed {codes}:\n" + "\n".join(logs))
    return elapsed, _logged_span([(b / "train.log").read_text() for b in bases]), peak_kb / 1024


def _peak_while_running(processes: Sequence[subprocess.Popen[bytes]]) -> int:
    """The largest VmHWM (kB) of the processes, read every 20 ms until they end: a high-water
    mark only grows, so the last read holds the peak. (wait4's ru_maxrss would count this
    process's memory too: a child's high-water mark starts before it execs.)"""
    peak = 0
    while any(p.poll() is None for p in processes):
        for process in processes:
            with contextlib.suppress(OSError, IndexError):
                status = Path(f"/proc/{process.pid}/status").read_text()
                peak = max(peak, int(status.split("VmHWM:")[1].split()[0]))
        time.sleep(0.02)
    return peak


def _logged_span(logs: Sequence[str]) -> float:
    starts, ends = [], []
    for log in logs:
        stamps = [_stamp(line) for line in log.splitlines() if _stamp(line)]
        started = [_stamp(line) for line in log.splitlines() if " on channels " in line]
        starts.append(min(s for s in started if s) if started else min(stamps))
        ends.append(max(stamps))
    return max(ends) - min(starts)


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


def auc(model_dir: Path, features: np.ndarray, labels: np.ndarray) -> float:
    import xgboost as xgb
    from sklearn.metrics import roc_auc_score

    booster = xgb.Booster()
    booster.load_model(bytearray((model_dir / "xgboost-model").read_bytes()))
    return float(roc_auc_score(labels, booster.predict(xgb.DMatrix(features))))


def kmeans_objective(model_dir: Path, features: np.ndarray) -> tuple[np.ndarray, float]:
    from smserve.algorithms.ndarray import read_ndarray_file
    from smserve.training.kmeans_distances import nearest_squared_distances

    centres = read_ndarray_file(model_dir / "model_algo-1")
    return centres, float(nearest_squared_distances(features, centres).sum())


Times = tuple[float, float, float]  # wall, logged training, largest host's peak RSS (MB)


def compare(
    work: Path,
    name: str,
    hyperparameters: Mapping[str, str],
    rows: tuple[np.ndarray, np.ndarray],
    repeats: int = 1,
) -> tuple[list[Times], list[Times], Path, Path]:
    """Each job's times over ``repeats`` runs, one host and two hosts taking turns to go first."""
    features, labels = rows
    half = features.shape[0] // 2
    one = prepare(work, f"{name}-one", hyperparameters, [rows])
    two = prepare(
        work,
        f"{name}-two",
        hyperparameters,
        [(features[:half], labels[:half]), (features[half:], labels[half:])],
    )
    times: dict[int, list[Times]] = {1: [], 2: []}
    for run in range(repeats):
        for bases in (one, two) if run % 2 == 0 else (two, one):
            times[len(bases)].append(run_job(bases))
    return times[1], times[2], one[0] / "model", two[0] / "model"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--held-out", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=7, help="runs of k-means and set-up")
    parser.add_argument("--only", choices=("xgboost", "kmeans"), default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="smserve-multihost-"))
    try:
        return _bench(args, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def _bench(args: argparse.Namespace, work: Path) -> int:
    compiled_as_installed()
    rows = make_rows(args.rows, 0)
    xgb_hp = {
        "objective": "binary:logistic",
        "tree_method": "hist",
        "num_round": str(args.rounds),
        "max_depth": "6",
        "eval_metric": "auc",
    }
    one, two, _, _ = compare(
        work, "setup", {**xgb_hp, "num_round": "1"}, make_rows(1000, 2), args.repeats
    )
    _report("collective set-up (1,000 rows, 1 round)", one, two, difference=True)
    if args.only != "kmeans":
        _xgboost(args, work, xgb_hp, rows)
    if args.only != "xgboost":
        _kmeans(args, work, rows)
    return 0


def _xgboost(
    args: argparse.Namespace,
    work: Path,
    xgb_hp: Mapping[str, str],
    rows: tuple[np.ndarray, np.ndarray],
) -> None:
    held_features, held_labels = make_rows(args.held_out, 1)
    one, two, one_dir, two_dir = compare(work, "xgboost", xgb_hp, rows)
    _report(f"xgboost hist {args.rounds} rounds, {args.rows:,} x {N_FEATURES}", one, two)
    auc_one = auc(one_dir, held_features, held_labels)
    auc_two = auc(two_dir, held_features, held_labels)
    print(
        f"  held-out AUC ({args.held_out:,} rows): one host {auc_one:.5f}, "
        f"two hosts {auc_two:.5f}, difference {auc_two - auc_one:+.5f}"
    )


def _kmeans(args: argparse.Namespace, work: Path, rows: tuple[np.ndarray, np.ndarray]) -> None:
    km_hp = {"algorithm": "kmeans", "k": "10", "feature_dim": str(N_FEATURES)}
    one, two, one_dir, two_dir = compare(work, "kmeans", km_hp, rows, args.repeats)
    _report(f"kmeans k=10, {args.rows:,} x {N_FEATURES}", one, two)
    _, ssd_one = kmeans_objective(one_dir, rows[0])
    _, ssd_two = kmeans_objective(two_dir, rows[0])
    print(
        f"  objective (summed squared distances over all rows): one host {ssd_one:.6g}, "
        f"two hosts {ssd_two:.6g}, relative difference {(ssd_two - ssd_one) / ssd_one:+.4%}"
    )


def _report(what: str, one: list[Times], two: list[Times], difference: bool = False) -> None:
    runs = f", median of {len(one)} runs" if len(one) > 1 else ""
    for label, i in (("wall", 0), ("training (logged)", 1)):
        a, b = statistics.median(t[i] for t in one), statistics.median(t[i] for t in two)
        tail = f"difference {b - a:+.2f} s" if difference else f"ratio {b / a:.2f}x"
        print(f"{what}, {label}{runs}: one host {a:.2f} s, two hosts {b:.2f} s, {tail}")
        if len(one) > 1:
            print(f"    one host {_spread(one, i)}; two hosts {_spread(two, i)}")
    a, b = statistics.median(t[2] for t in one), statistics.median(t[2] for t in two)
    print(f"{what}, peak RSS of the largest host{runs}: one host {a:.0f} MB, two hosts {b:.0f} MB")


def _spread(times: list[Times], i: int) -> str:
    return f"{min(t[i] for t in times):.2f}-{max(t[i] for t in times):.2f} s"


if __name__ == "__main__":
    raise SystemExit(main())
