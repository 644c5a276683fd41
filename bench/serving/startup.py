"""``smserve serve`` start-up: seconds from the command to the first 200 on /ping, and the
resident memory of its whole process tree (supervisor, gunicorn master, workers, nginx) once
serving, for the harness XGBoost model (100 trees, depth 6, 50 features).

    .venv/bin/python bench/serving/startup.py [--runs 3] [--workers 2] [--against <src dir>]

``--against`` also starts the server from another tree's sources (PYTHONPATH=<src dir>,
e.g. a ``git archive`` copy), alternated run by run with this one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402

SMSERVE = Path(sys.executable).parent / "smserve"


def process_tree_rss_mb(root: int) -> float:
    """The summed VmRSS of ``root`` and every process below it, in MiB (Linux /proc)."""
    parents, rss = {}, {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
        except (OSError, ValueError):
            continue
        pid = int(status.parent.name)
        parents[pid] = int(fields["PPid"])
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    tree, grew = {root}, True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grew = bool(below)
    return sum(rss.get(pid, 0) for pid in tree) / 1024


def start_once(model_dir: Path, workers: int, src: str | None) -> tuple[float, float]:
    port = harness.free_port()
    env = {**os.environ, "SM_MODEL_DIR": str(model_dir), "SAGEMAKER_BIND_TO_PORT": str(port)}
    env["SMSERVE_WORKERS"] = str(workers)
    if src:
        env["PYTHONPATH"] = src
    started = time.perf_counter()
    quiet = subprocess.DEVNULL
    process = subprocess.Popen([str(SMSERVE), "serve"], env=env, stdout=quiet, stderr=quiet)
    try:
        seconds = _first_ping(port, started)
        time.sleep(2)  # every worker loaded
        return seconds, process_tree_rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _first_ping(port: int, started: float) -> float:
    while time.perf_counter() - started < 60:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=1):
                return time.perf_counter() - started
        except OSError:
            time.sleep(0.01)
    raise RuntimeError("no 200 on /ping within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--against", default=None)
    args = parser.parse_args()
    if args.against and not (Path(args.against) / "smserve" / "__init__.py").is_file():
        parser.error(f"--against {args.against}: no smserve package there")
    model_dir = Path(tempfile.mkdtemp())
    harness.build_xgboost(model_dir)
    trees = [("this tree", None)] + ([(args.against, args.against)] if args.against else [])
    for run in range(args.runs):
        for name, src in trees:
            seconds, rss = start_once(model_dir, args.workers, src)
            print(f"run {run + 1} {name:30s} first /ping {seconds:5.2f} s, tree RSS {rss:4.0f} MiB")


if __name__ == "__main__":
    main()
