"""In-process XGBoost prediction: the fast predictor against XGBoost's ``inplace_predict``.

Two models: the bench model (binary:logistic, 100 trees of depth 6, 50 features, as
``harness.build_xgboost``) and a big one (binary:logistic, 1,000 trees of depth 8, 100
features, trained on noisy labels so that the trees fill their depth). Each is loaded as the
server loads it (``XGBoost.load``, one thread per worker as with the default two workers on
two CPUs); the script reports how long after the load the fast predictor starts serving, and
then, per batch size, the median time of one prediction (``predict_type="value"``) by

- ``inplace_predict``: XGBoost's Python API on the booster (nthread=1), the floor to beat;
- ``served``: what the algorithm runs for that size (fast predictor up to the size chosen at
  load, XGBoost's C API above it);
- ``fast``: the fast predictor alone at every size (also above the chosen one, to show why);

with each one's ratio to ``inplace_predict`` measured in the same run. Every answer is checked
to be the bits of ``inplace_predict``'s.

    flock /tmp/smserve-bench.lock .venv/bin/python bench/fast_predictor.py
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xgboost as xgb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import build_xgboost  # noqa: E402

from smserve.algorithms.xgboost import XGBoost, _predict  # noqa: E402
from smserve.algorithms.xgboost_model import Member  # noqa: E402
from smserve.config import Settings  # noqa: E402

SIZES = (1, 10, 100, 1000, 10000)


def build_big(model_dir: Path) -> None:
    """1,000 trees of depth 8 on 100 features; noisy labels keep every tree growing."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(5000, 100)).astype(np.float32)
    signal = x[:, 0] + x[:, 1] * x[:, 2] + np.sin(3 * x[:, 3]) + x[:, 4:20].sum(axis=1) / 4
    y = (signal + rng.normal(scale=1.5, size=len(x)) > 0).astype(np.float32)
    params = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.05, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=1000)
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "xgboost-model").write_bytes(booster.save_raw("json"))


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


def median_s(call: Callable[[], object], budget_s: float) -> float:
    call()
    once = _timed(call)
    repeat = int(min(max(budget_s / max(once, 1e-7), 5), 2000))
    return statistics.median(_timed(call) for _ in range(repeat))


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


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
