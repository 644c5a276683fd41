"""Two hosts with one CPU each against one host with one CPU: ``smserve train`` as real
processes on loopback (hosts 127.0.0.2 and 127.0.0.3, each pinned by ``taskset`` to its own
CPU; the one-host job on CPU 0), XGBoost ``hist`` and k-means on the same rows.

Data: ``--rows`` (default 1,000,000) x 50 float32 features as Parquet (label first), a binary
label from a noisy non-linear function; ``--held-out`` further rows score both XGBoost models
(AUC). The two-host job gets the rows as two ShardedByS3Key halves. k-means: k=10, the
default mini-batch size and centre factor, labels ignored. Each job also reports the peak
RSS of its largest host and the CPU time of all its hosts, user and kernel apart. The
collective's set-up is measured apart: the same jobs on 1,000 rows, two hosts minus one host
(two meetings: census and training).

For k-means the logged training time is also cut at the last host's first mini-batch step:
before it, reading the rows and (two hosts) joining the group; from it, the steps, the
reduction to k and the scores. And the wall-time ratio is also taken run by run (each two-host
run against the one-host run of the same turn), with its range.

k-means also runs a floor: two one-host jobs of half the rows each, side by side on the two
CPUs, with no collective at all: what two hosts would take if the collective cost nothing. The
two share the machine's memory bus and caches, and each still starts its interpreter and reads
its own rows. Two hosts minus the floor is what the collective costs (the XGBoost library, joining
the group, the allreduce of every step and its waits). Beside it, one of those half jobs alone:
the floor minus it is what two jobs at once cost each other on one machine.

smserve's byte code is compiled first, as an installed package has it.
k-means and the set-up run ``--repeats`` times (default 7), the jobs taking turns to go first
(one host, two hosts, floor, half alone; then two hosts, floor, ...), and report medians with
their range: a job's time depends on what ran just before it, so a fixed order would favour
one side. (On this project's VM the same one-host k-means job spends 0.14 s to 0.49 s in the
kernel, run to run, nearly all of it zeroing the pages it touches first; its user time stays
within 0.1 s. Compacting memory before each job does not change that.) XGBoost runs once.

    nice .venv/bin/python bench/training/multihost.py [--rows N] [--rounds 100] [--repeats 7]
        [--only xgboost|kmeans] [--work DIR]
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.training.host_jobs import (  # noqa: E402
    N_FEATURES,
    Times,
    compiled_as_installed,
    prepare,
    run_job,
)


def make_rows(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_rows, N_FEATURES)).astype(np.float32)
    signal = features[:, 0] + features[:, 1] * features[:, 2] - np.abs(features[:, 3])
    labels = (signal + rng.normal(0, 1.0, n_rows) > 0).astype(np.float32)
    return features, labels


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


def compare(
    work: Path,
    name: str,
    hyperparameters: Mapping[str, str],
    rows: tuple[np.ndarray, np.ndarray],
    repeats: int = 1,
    floor: bool = False,
) -> tuple[dict[str, list[Times]], Path, Path]:
    """Each job's times over ``repeats`` runs (one host, two hosts; with ``floor``, the floor
    and half alone too), the jobs taking turns to go first; and the one-host and two-host
    model folders."""
    features, labels = rows
    half = features.shape[0] // 2
    halves = [(features[:half], labels[:half]), (features[half:], labels[half:])]
    jobs = {
        "one host": prepare(work, f"{name}-one", hyperparameters, [rows]),
        "two hosts": prepare(work, f"{name}-two", hyperparameters, halves),
    }
    if floor:
        jobs["floor"] = [
            prepare(work, f"{name}-half{i}", hyperparameters, [halves[i]])[0] for i in (0, 1)
        ]
        jobs["half alone"] = jobs["floor"][:1]
    names = list(jobs)
    times: dict[str, list[Times]] = {job: [] for job in names}
    for run in range(repeats):
        for job in names[run % len(names) :] + names[: run % len(names)]:
            times[job].append(run_job(jobs[job]))
    return times, jobs["one host"][0] / "model", jobs["two hosts"][0] / "model"


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
    setup, _, _ = compare(
        work, "setup", {**xgb_hp, "num_round": "1"}, make_rows(1000, 2), args.repeats
    )
    _report("collective set-up (1,000 rows, 1 round)", setup, difference=True)
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
    times, one_dir, two_dir = compare(work, "xgboost", xgb_hp, rows)
    _report(f"xgboost hist {args.rounds} rounds, {args.rows:,} x {N_FEATURES}", times)
    auc_one = auc(one_dir, held_features, held_labels)
    auc_two = auc(two_dir, held_features, held_labels)
    print(
        f"  held-out AUC ({args.held_out:,} rows): one host {auc_one:.5f}, "
        f"two hosts {auc_two:.5f}, difference {auc_two - auc_one:+.5f}"
    )


def _kmeans(args: argparse.Namespace, work: Path, rows: tuple[np.ndarray, np.ndarray]) -> None:
    km_hp = {"algorithm": "kmeans", "k": "10", "feature_dim": str(N_FEATURES)}
    times, one_dir, two_dir = compare(work, "kmeans", km_hp, rows, args.repeats, floor=True)
    _report(f"kmeans k=10, {args.rows:,} x {N_FEATURES}", times)
    _, ssd_one = kmeans_objective(one_dir, rows[0])
    _, ssd_two = kmeans_objective(two_dir, rows[0])
    print(
        f"  objective (summed squared distances over all rows): one host {ssd_one:.6g}, "
        f"two hosts {ssd_two:.6g}, relative difference {(ssd_two - ssd_one) / ssd_one:+.4%}"
    )


def _report(what: str, times: dict[str, list[Times]], difference: bool = False) -> None:
    """Each job's median (and range) of each measure, with its ratio to one host (or, for
    ``difference``, two hosts minus one host); two hosts minus the floor where there is one."""
    runs = f", median of {len(times['one host'])} runs" if len(times["one host"]) > 1 else ""
    for label, i in (("wall", 0), ("training (logged)", 1)):
        medians = {job: statistics.median(t[i] for t in runs_of) for job, runs_of in times.items()}
        print(f"{what}, {label}{runs}: " + _against_one_host(medians, difference))
        if runs:
            print("    " + "; ".join(f"{job} {_spread(t, i)}" for job, t in times.items()))
        if "floor" in medians:
            collective = medians["two hosts"] - medians["floor"]
            print(f"    two hosts minus the floor (what the collective costs): {collective:+.2f} s")
    if runs and not difference:
        print(f"    wall, two hosts / one host, run by run: {_paired(times)}")
    if not any(math.isnan(t[3]) for r in times.values() for t in r):
        _phases(what, times, runs)
    peaks = ", ".join(
        f"{job} {statistics.median(t[2] for t in r):.0f} MB" for job, r in times.items()
    )
    print(f"{what}, peak RSS of the largest host{runs}: {peaks}")
    if runs:
        _cpu(what, times, runs)


def _cpu(what: str, times: dict[str, list[Times]], runs: str) -> None:
    """The CPU time of all hosts, user and kernel apart. The kernel's share is mostly zeroing
    the pages a job touches first; where the machine is a VM, how fast that goes depends on
    whether the hypervisor still backs those pages, which no job controls."""
    line = "; ".join(
        f"{job} {statistics.median(t[4] for t in r):.2f} + "
        f"{statistics.median(t[5] for t in r):.2f} s ({_spread(r, 5)} in the kernel)"
        for job, r in times.items()
    )
    print(f"{what}, CPU time of all hosts, user + kernel{runs}: {line}")


def _paired(times: dict[str, list[Times]]) -> str:
    """The ratio of each run of two hosts to the one-host run of the same turn: median, range."""
    pairs = zip(times["one host"], times["two hosts"], strict=True)
    ratios = [two[0] / one[0] for one, two in pairs]
    return f"median {statistics.median(ratios):.2f}x ({min(ratios):.2f}x-{max(ratios):.2f}x)"


def _phases(what: str, times: dict[str, list[Times]], runs: str) -> None:
    """The logged training time cut at the last host's first k-means step: before it, reading
    the rows and (two hosts) joining; from it, the steps, the reduction and the scores."""
    for label, measure in (
        ("before the first step (reading, joining)", lambda t: t[3]),
        ("from the first step to the end", lambda t: t[1] - t[3]),
    ):
        medians = {job: statistics.median(map(measure, r)) for job, r in times.items()}
        line = ", ".join(f"{job} {m:.2f} s" for job, m in medians.items())
        if "floor" in medians:
            line += f"; two hosts minus the floor {medians['two hosts'] - medians['floor']:+.2f} s"
        print(f"{what}, {label}{runs}: {line}")


def _against_one_host(medians: dict[str, float], difference: bool) -> str:
    one = medians["one host"]
    if difference:
        two = medians["two hosts"]
        return f"one host {one:.2f} s, two hosts {two:.2f} s, difference {two - one:+.2f} s"
    return ", ".join(f"{job} {m:.2f} s ({m / one:.2f}x)" for job, m in medians.items())


def _spread(times: list[Times], i: int) -> str:
    return f"{min(t[i] for t in times):.2f}-{max(t[i] for t in times):.2f} s"


if __name__ == "__main__":
    raise SystemExit(main())
