"""Fixed cost and marginal rate of `smserve score`'s engines: `score_files.py --fixed-cost`.

Each engine scores the N-row file and a two-file input (the file and a hard link to it, 2N
rows), best of ``--repeat`` each, alternately. The marginal rate is N / (t(2N) - t(N)) and
the fixed overhead is the intercept 2 t(N) - t(2N): what the whole command costs beyond
its rows. Ray runs on a fresh local cluster (the command starts and stops it; not with
``--skip-ray``), and with ``--ray-running`` also on a running two-node loopback cluster
(``ray_loopback.loopback_cluster``: a head and a second node of 2 logical CPUs each, started
here and stopped by PID; ``--address`` its own; one job first, untimed, since a cluster's
first job pays one-off costs no later job does, such as the first read of the modules). Every
Ray command runs on loopback. Ray's parts come from the command's log; every output is
checked against the local engine's bytes."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from bench.scoring import engine_runs, ray_loopback
from bench.scoring.engine_runs import Fit, Inputs

# What the command logs about its own time (smserve.scoring.ray.engine, smserve.scoring.command).
PARTS = {
    "cluster start (ray.init)": r"Ray cluster ready in ([\d.]+) s",
    "job set-up (driver)": r"actors, set up in ([\d.]+) s",
    "actor start (to the first ready)": r"the first actor ready after ([\d.]+) s",
    "... to the first answer": r"the first answer after ([\d.]+) s",
    "shutdown": r"Ray shut down in ([\d.]+) s",
}
COMMAND_TIME = r"records in ([\d.]+) s"
TARGET = 0.6  # issue 14: the Ray engine >= 0.6x the local engine's rows/s


def run(args: argparse.Namespace, data: Path) -> None:
    inputs = engine_runs.reference_inputs(args, data, args.dir / "overhead")
    fits = {"local": measure(args, [], inputs)}
    if not args.skip_ray:
        fresh = ["--engine", "ray", "--address", "local"]  # never a cluster left running here
        with ray_loopback.fresh_environment() as env:
            fits["ray, fresh cluster"] = measure(args, fresh, inputs, env)
    if args.ray_running:
        with ray_loopback.loopback_cluster(2) as cluster:
            extra = ["--engine", "ray", "--address", cluster.address]
            warm_up = engine_runs.score_command(args, data, args.dir / "warm-up", extra)
            engine_runs.timed(warm_up, cluster.env())
            fits["ray, running 2 nodes"] = measure(args, extra, inputs, cluster.env())
    report(fits)
    print(f"load average at the end: {engine_runs.load_average()}", flush=True)


def measure(
    args: argparse.Namespace, extra: list[str], inputs: Inputs, env: dict[str, str] | None = None
) -> Fit:
    fit = Fit(args.rows)
    for _ in range(args.repeat):
        engine_runs.one_round(fit, args, extra, inputs, env)
    return fit


def report(fits: dict[str, Fit]) -> None:
    local = fits["local"]
    engine_runs.print_fits(fits)
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
