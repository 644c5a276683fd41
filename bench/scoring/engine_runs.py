"""What the offline scoring benches share: the input file, `smserve score`'s command line, a
timed run of it, and the two-line fit (N and 2N rows) that separates an engine's marginal
rate from its fixed cost. ``score_files.py``, ``score_overhead.py`` and ``score_spark.py``
use this one implementation."""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.shared import harness

MIB = 1024 * 1024
PIECE_ROWS = 50_000


def write_csv(path: Path, n_rows: int) -> None:
    """N rows x 50 features of the bench model's CSV (kept between runs of the same N)."""
    if path.exists() and path.with_suffix(".rows").read_text() == str(n_rows):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as sink:
        for start in range(0, n_rows, PIECE_ROWS):
            sink.write(harness.csv_body(harness.rows(min(PIECE_ROWS, n_rows - start), start)))
    path.with_suffix(".rows").write_text(str(n_rows))


def two_files(data: Path) -> Path:
    """A folder holding the file twice (hard links: no second copy on disk): 2N rows, two
    outputs."""
    folder = data.parent.parent / "two"
    folder.mkdir(exist_ok=True)
    for name in ("a.csv", "b.csv"):
        (folder / name).unlink(missing_ok=True)
        (folder / name).hardlink_to(data)
    return folder


def score_command(
    args: argparse.Namespace, inputs: Path, output: Path, extra: list[str]
) -> list[str]:
    """`smserve score` CSV -> CSV on the bench model in ``args.dir / "model"``."""
    return [
        harness.SMSERVE, "score", str(inputs), "--output", str(output),
        "--model-dir", str(args.dir / "model"), "--content-type", "text/csv",
        "--accept", "text/csv", "--workers", str(args.workers), *extra,
    ]  # fmt: skip


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS of the process tree (MiB, sampled every 0.1 s) and stderr of a
    command that must succeed."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    peak, tree = 0, psutil.Process(process.pid)
    reader = concurrent.futures.ThreadPoolExecutor(1).submit(process.stderr.read)  # type: ignore[union-attr]
    while process.poll() is None:
        try:
            procs = [tree, *tree.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs))
        except psutil.Error:
            pass
        time.sleep(0.1)
    stderr = reader.result()
    if process.returncode != 0:
        raise RuntimeError(f"{command[1:3]} exited {process.returncode}: {stderr[-3000:]}")
    return time.perf_counter() - began, peak / MIB, stderr


def digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(1 << 20):
            hasher.update(block)
    return hasher.hexdigest()


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass
class Fit:
    """Best wall seconds for N and 2N rows, the log of the best N-row run, and whether every
    output was the reference's bytes. The marginal rate is N / (t(2N) - t(N)); the fixed cost
    is the intercept 2 t(N) - t(2N): what the whole command costs beyond its rows."""

    rows: int
    one: float = float("inf")
    two: float = float("inf")
    log: str = ""
    same: list[bool] = field(default_factory=list)

    @property
    def marginal(self) -> float:
        return self.rows / (self.two - self.one)

    @property
    def overhead(self) -> float:
        return 2 * self.one - self.two

    @property
    def whole(self) -> float:
        return self.rows / self.one


@dataclass(frozen=True)
class Inputs:
    """The N-row file, the 2N-row folder, the local engine's answer digest, where runs write."""

    one: Path
    two: Path
    reference: str
    out: Path


def reference_inputs(args: argparse.Namespace, data: Path, out: Path) -> Inputs:
    """The local engine's answer to the N-row file (which also warms the page cache)."""
    timed(score_command(args, data, out / "reference", []))
    return Inputs(data, two_files(data), digest(out / "reference" / "data.csv.out"), out)


def one_round(
    fit: Fit, args: argparse.Namespace, engine: list[str], inputs: Inputs,
    env: dict[str, str] | None = None,
) -> None:  # fmt: skip
    """One N-row and one 2N-row run of ``engine`` into ``fit``, each output checked."""
    one, two = inputs.out / "one", inputs.out / "two"
    wall, _, log = timed(score_command(args, inputs.one, one, engine), env)
    if wall < fit.one:
        fit.one, fit.log = wall, log
    fit.two = min(fit.two, timed(score_command(args, inputs.two, two, engine), env)[0])
    answers = [one / "data.csv.out", *two.glob("*.out")]
    fit.same.append(len(answers) == 3 and {digest(a) for a in answers} == {inputs.reference})


def print_fits(fits: dict[str, Fit]) -> None:
    """One line per engine: whole-command and marginal rows/s (and their ratio to the first
    engine's, the local one), the fixed cost, the times, and whether every output matched."""
    local = next(iter(fits.values()))
    print(f"{'engine':<24} {'whole, N rows':>24} {'marginal rows/s':>22} {'fixed cost':>11}")
    for name, fit in fits.items():
        whole = f"{fit.whole:,.0f} ({fit.whole / local.whole:.2f}x)"
        marginal = f"{fit.marginal:,.0f} ({fit.marginal / local.marginal:.2f}x)"
        times = f"N: {fit.one:.2f} s, 2N: {fit.two:.2f} s, identical: {all(fit.same)}"
        print(f"{name:<24} {whole:>24} {marginal:>22} {fit.overhead:>9.2f} s   {times}")
