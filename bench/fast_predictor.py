"""In-process XGBoost prediction: the fast predictor against XGBoost's ``inplace_predict``.

Two models: the bench model (binary:logistic, 100 trees of depth 6, 50 features, as
``harness.build_xgboost``) and a big one (binary:logistic, 1,000 full trees of depth 8, 100
features; generated, see ``build_big``). Each is loaded as the
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
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import build_xgboost  # noqa: E402

from smserve.algorithms.xgboost.algorithm import XGBoost, _predict  # noqa: E402
from smserve.algorithms.xgboost.model import Member  # noqa: E402
from smserve.config import Settings  # noqa: E402

SIZES = (1, 10, 100, 1000, 10000)


def build_big(model_dir: Path, n_trees: int = 1000, depth: int = 8, n_features: int = 100) -> None:
    """binary:logistic, ``n_trees`` full trees of ``depth`` (511 nodes each for depth 8) on
    ``n_features`` features. The trees are generated, not trained: training 1,000 trees of
    depth 8 takes over half an hour on this shared machine, and rarely fills them (confident
    rows stop splitting), while prediction costs what the trees' shape costs, whatever fitted
    their values. Thresholds are drawn like the features (standard normal), so every path is
    taken; XGBoost loads and predicts the file as any other."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200, n_features)).astype(np.float32)
    template = xgb.train(
        {"objective": "binary:logistic", "max_depth": 1, "nthread": 1},
        xgb.DMatrix(x, label=(x[:, 0] > 0).astype(np.float32)),
        num_boost_round=1,
    )
    document = json.loads(template.save_raw("json"))
    model = document["learner"]["gradient_booster"]["model"]
    model["trees"] = [_full_tree(i, depth, n_features, rng) for i in range(n_trees)]
    model["tree_info"] = [0] * n_trees
    model["iteration_indptr"] = list(range(n_trees + 1))
    model["gbtree_model_param"]["num_trees"] = str(n_trees)
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "xgboost-model").write_text(json.dumps(document))


def _full_tree(index: int, depth: int, n_features: int, rng: np.random.Generator) -> dict[str, Any]:
    n_inner, n_nodes = 2**depth - 1, 2 ** (depth + 1) - 1
    nodes = np.arange(n_nodes)
    inner = nodes < n_inner
    values = np.where(inner, rng.normal(size=n_nodes), rng.normal(scale=0.05, size=n_nodes))
    return {
        "base_weights": [0.0] * n_nodes,
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": rng.integers(0, 2, n_nodes).tolist(),
        "id": index,
        "left_children": np.where(inner, 2 * nodes + 1, -1).tolist(),
        "right_children": np.where(inner, 2 * nodes + 2, -1).tolist(),
        "loss_changes": [0.0] * n_nodes,
        "parents": [2147483647, *((nodes[1:] - 1) // 2).tolist()],
        "split_conditions": values.astype(np.float32).tolist(),
        "split_indices": np.where(inner, rng.integers(0, n_features, n_nodes), 0).tolist(),
        "split_type": [0] * n_nodes,
        "sum_hessian": [1.0] * n_nodes,
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(n_features),
            "num_nodes": str(n_nodes),
            "size_leaf_vector": "1",
        },
    }


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
