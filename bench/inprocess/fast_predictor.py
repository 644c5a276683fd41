"""In-process XGBoost prediction: the fast predictor against XGBoost's ``inplace_predict``.

Two models: the bench model (binary:logistic, 100 trees of depth 6, 50 features, as
``harness.build_xgboost``) and a big one (binary:logistic, 1,000 full trees of depth 8, 100
features; generated, see ``harness.build_big``). Each is loaded as the
server loads it (``XGBoost.load``, one thread per worker as with the default two workers on
two CPUs); the script reports how long after the load the fast predictor starts serving, and
then, per batch size, the median time of one prediction (``predict_type="value"``) by

- ``inplace_predict``: XGBoost's Python API on the booster (nthread=1), the floor to beat;
- ``served``: what the algorithm runs for that size (fast predictor up to the size chosen at
  load, XGBoost's C API above it);
- ``fast``: the fast predictor alone at every size (also above the chosen one, to show why);

with each one's ratio to ``inplace_predict`` measured in the same run. Every answer is checked
to be the bits of ``inplace_predict``'s.

    flock /tmp/smserve-bench.lock .venv/bin/python bench/inprocess/fast_predictor.py
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from bench.shared.harness import build_big, build_xgboost  # noqa: E402
from bench.shared.timing import median_s  # noqa: E402
from smserve.algorithms.xgboost.algorithm import XGBoost, _predict  # noqa: E402
from smserve.algorithms.xgboost.model import Member  # noqa: E402
from smserve.config import Settings  # noqa: E402

SIZES = (1, 10, 100, 1000, 10000)


def load_and_wait(model_dir: Path) -> tuple[XGBoost, float, float]:
    """The algorithm, the seconds its load took and the seconds from then until its fast
    predictor served."""
    settings = Settings(model_dir=model_dir, workers=2, threads=1)
    start = time.monotonic()
    algorithm = XGBoost.load(settings, model_dir)
    loaded = time.monotonic()
    slot = algorithm.members[0].fast
    while slot is not None and slot.serving is None and time.monotonic() - loaded < 300:
        time.sleep(0.001)
    return algorithm, loaded - start, time.monotonic() - loaded


def compare(algorithm: XGBoost, size: int, budget_s: float) -> dict[str, float]:
    member: Member = algorithm.members[0]
    booster = member.booster.copy()
    booster.set_param({"nthread": 1})
    x = np.random.default_rng(size).normal(size=(size, algorithm.n_features or 0))
    x = x.astype(np.float32)
    x[np.random.default_rng(1).random(x.shape) < 0.05] = np.nan
    calls = {
        "inplace_predict": lambda: booster.inplace_predict(x, validate_features=False),
        "served": lambda: _predict(member, x, False, False),
    }
    serving = member.fast.serving if member.fast is not None else None
    if serving is not None:
        calls["fast"] = lambda: serving.predictor.predict(x, False)
    expected = np.asarray(calls["inplace_predict"]()).view(np.uint32)
    for name, call in calls.items():
        got = np.asarray(call()).view(np.uint32)
        assert np.array_equal(got, expected), f"{name} differs from inplace_predict"
    return {name: median_s(call, budget_s) for name, call in calls.items()}


def report(name: str, algorithm: XGBoost, load_s: float, ready_s: float, budget: float) -> None:
    serving = algorithm.members[0].fast.serving if algorithm.members[0].fast else None
    chosen = serving.max_rows if serving else 0
    print(f"\n{name}: loaded in {load_s:.2f} s; fast predictor serving {ready_s:.2f} s later, ")
    print(f"  for batches of 1-{chosen} rows (chosen at load)")
    print("  rows   | inplace_predict | served (ratio)        | fast alone (ratio)")
    for size in SIZES:
        times = compare(algorithm, size, budget)
        base = times["inplace_predict"]
        cells = [
            f"{times[k] * 1e3:9.4f} ms ({base / times[k]:5.1f}x)"
            for k in times
            if k != "inplace_predict"
        ]
        print(f"  {size:6d} | {base * 1e3:12.4f} ms | " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    parser.add_argument("--models", type=Path, help="keep the trained models here, and reuse them")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="  log: %(message)s")
    with tempfile.TemporaryDirectory(prefix="smserve-fast-bench-") as scratch:
        models = args.models or Path(scratch)
        bench_dir, big_dir = models / "bench", models / "big"
        if not (bench_dir / "xgboost-model").exists():
            build_xgboost(bench_dir)
        if not (big_dir / "xgboost-model").exists():
            build_big(big_dir)
        for name, model_dir in (
            ("bench model (100 x depth 6)", bench_dir),
            ("big model (1,000 x depth 8)", big_dir),
        ):
            algorithm, load_s, ready_s = load_and_wait(model_dir)
            report(name, algorithm, load_s, ready_s, args.budget)


if __name__ == "__main__":
    main()
