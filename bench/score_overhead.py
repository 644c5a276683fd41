"""Fixed cost and marginal rate of `smserve score`'s engines: `score_files.py --fixed-cost`.

Each engine scores the N-row file and a two-file input (the file and a hard link to it, 2N
rows), best of ``--repeat`` each, alternately. The marginal rate is N / (t(2N) - t(N)) and
the fixed overhead is the intercept 2 t(N) - t(2N): what the whole command costs beyond
its rows. Ray runs on a fresh local cluster (the command starts and stops it; not with
``--skip-ray``), and with ``--ray-running`` also on a running two-node loopback cluster
(``ray_loopback.loopback_cluster``: a head and a second node of 2 logical CPUs each, started
here and stopped by PID; ``--address`` its own; one job first, untimed, since a cluster's first
Ray Data job also starts Ray Data's own helper actors). Every Ray command runs on loopback.
Ray's parts come from the command's log; every output is checked against the local engine's
bytes."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path

import ray_loopback
import score_files

# What the command logs about its own time (smserve.scoring.ray.engine, smserve.scoring.command).
PARTS = {
    "cluster start (ray.init)": r"Ray cluster ready in ([\d.]+) s",
    "dataset set-up (driver)": r"shards set up in ([\d.]+) s",
    "actor start (to the first ready)": r"the first actor ready after ([\d.]+) s",
    "... to the first answer": r"the first answer after ([\d.]+) s",
    "shutdown": r"Ray shut down in ([\d.]+) s",
}
COMMAND_TIME = r"records in ([\d.]+) s"
TARGET = 0.6  # issue 14: the Ray engine >= 0.6x the local engine's rows/s


@dataclass
class Fit:
    """Best wall seconds for N and 2N rows, and the log of the best N-row run."""

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


def run(args: argparse.Namespace, data: Path) -> None:
    two, out = _two_files(data), args.dir / "overhead"
    score_files.timed(_command(args, data, out / "reference", []))  # also warms the page cache
    reference = score_files.digest(out / "reference" / "data.csv.out")
    fits = {"local": measure(args, [], data, two, reference)}
    if not args.skip_ray:
        fresh = ["--engine", "ray", "--address", "local"]  # never a cluster left running here
        with ray_loopback.fresh_environment() as env:
            fits["ray, fresh cluster"] = measure(args, fresh, data, two, reference, env)
    if args.ray_running:
        with ray_loopback.loopback_cluster(2) as cluster:
            extra = ["--engine", "ray", "--address", cluster.address]
            score_files.timed(_command(args, data, args.dir / "warm-up", extra), cluster.env())
            name = "ray, running 2 nodes"
            fits[name] = measure(args, extra, data, two, reference, cluster.env())
    report(fits)
    print(f"load average at the end: {score_files.load_average()}", flush=True)


def measure(
    args: argparse.Namespace, extra: list[str], one: Path, two: Path, reference: str,
    env: dict[str, str] | None = None,
) -> Fit:  # fmt: skip
    fit, out = Fit(args.rows), args.dir / "overhead"
    for _ in range(args.repeat):
        wall, _, log = score_files.timed(_command(args, one, out / "one", extra), env)
        if wall < fit.one:
            fit.one, fit.log = wall, log
        fit.two = min(fit.two, score_files.timed(_command(args, two, out / "two", extra), env)[0])
        outputs = [out / "one" / "data.csv.out", *(out / "two").glob("*.out")]
        digests = [score_files.digest(path) for path in outputs]
        fit.same.append(len(digests) == 3 and set(digests) == {reference})
    return fit


def report(fits: dict[str, Fit]) -> None:
    local = fits["local"]
    print(f"{'engine':<22} {'whole, N rows':>22} {'marginal rows/s':>24} {'fixed overhead':>15}")
    for name, fit in fits.items():
        whole = f"{fit.whole:,.0f} ({fit.whole / local.whole:.2f}x)"
        marginal = f"{fit.marginal:,.0f} ({fit.marginal / local.marginal:.2f}x)"
        times = f"N: {fit.one:.2f} s, 2N: {fit.two:.2f} s, identical: {all(fit.same)}"
        print(f"{name:<22} {whole:>22} {marginal:>24} {fit.overhead:>13.2f} s   {times}")
    for name, fit in fits.items():
        if name != "local":
            print(f"ray/local ({name}): whole command {fit.whole / local.whole:.2f}x, marginal "
                  f"{fit.marginal / local.marginal:.2f}x, fixed overhead {fit.overhead:.2f} s "
                  f"(local {local.overhead:.2f} s)")  # fmt: skip
            print(f"    whole command >= {TARGET}x local from about {break_even(fit, local)}")
        else:
            print("local engine:")
        parts(fit)


def break_even(ray: Fit, local: Fit) -> str:
    """Rows at which Ray's whole command reaches TARGET x the local engine's rows/s, by the
    two lines fitted (an extrapolation: each line is fitted on N and 2N rows only)."""
    per_row = 1 / local.marginal - TARGET / ray.marginal
    if per_row <= 0:
        return "never (its marginal rate is under the target too)"
    return f"{(TARGET * ray.overhead - local.overhead) / per_row:,.0f} rows (extrapolated)"


def parts(fit: Fit) -> None:
    """The N-row run's own log: where the fixed cost goes."""
    for name, pattern in PARTS.items():
        if found := re.search(pattern, fit.log):
            print(f"    {name:<34} {float(found.group(1)):6.2f} s")
    own = re.search(COMMAND_TIME, fit.log)
    if own:
        rest = fit.one - float(own.group(1))  # the command times itself from after its imports
        print(f"    {'Python start, imports, exit':<34} {rest:6.2f} s")


def _two_files(data: Path) -> Path:
    """A folder of two names for the same bytes (a hard link: no second 458 MB on disk)."""
    folder = data.parent.parent / "in2"
    folder.mkdir(exist_ok=True)
    for name in ("a.csv", "b.csv"):
        (folder / name).unlink(missing_ok=True)
        (folder / name).hardlink_to(data)
    return folder


def _command(args: argparse.Namespace, inputs: Path, output: Path, extra: list[str]) -> list[str]:
    return [
        score_files.harness.SMSERVE, "score", str(inputs), "--model-dir", str(args.dir / "model"),
        "--content-type", "text/csv", "--accept", "text/csv", "--workers", str(args.workers),
        "--output", str(output), *extra,
    ]  # fmt: skip
