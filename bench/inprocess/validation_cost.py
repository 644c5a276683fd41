"""What load-time validation (``xgboost.validation``) adds to loading the 1,000-tree depth-8 bench
model (bench/shared/harness.py ``build_big``), as JSON and as UBJSON: in alternating rounds, the
whole ``XGBoost.load`` (validation included; the fast predictor off, since it builds in the
background) and ``validate`` alone on the same bytes; the best of each. The share is
validate / (load - validate): what the load took without it.

    .venv/bin/python bench/inprocess/validation_cost.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import xgboost as xgb

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402
from smserve.algorithms.xgboost.algorithm import XGBoost  # noqa: E402
from smserve.algorithms.xgboost.validation import validate  # noqa: E402
from smserve.config import Settings  # noqa: E402


def best_of(call: Callable[[], object], rounds: list[float]) -> None:
    start = time.perf_counter()
    call()
    rounds.append(time.perf_counter() - start)


def measure(model_dir: Path, rounds: int) -> tuple[float, float]:
    settings = Settings(fast_predictor="off")
    path = model_dir / "xgboost-model"
    data = path.read_bytes()
    loads: list[float] = []
    checks: list[float] = []
    for _ in range(rounds):
        best_of(lambda: XGBoost.load(settings, model_dir), loads)
        best_of(lambda: validate(path, data), checks)
    return min(loads), min(checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="validation-cost-") as scratch:
        json_dir, ubj_dir = Path(scratch) / "json", Path(scratch) / "ubj"
        harness.build_big(json_dir)
        booster = xgb.Booster()
        booster.load_model(bytearray((json_dir / "xgboost-model").read_bytes()))
        ubj_dir.mkdir()
        (ubj_dir / "xgboost-model").write_bytes(bytes(booster.save_raw("ubj")))
        for name, folder in (("JSON", json_dir), ("UBJSON", ubj_dir)):
            size = (folder / "xgboost-model").stat().st_size
            load, check = measure(folder, args.rounds)
            share = check / max(load - check, 1e-9)
            print(
                f"{name:6s} {size / 2**20:5.1f} MiB: load {load:.3f} s (validation included), "
                f"validation {check:.3f} s = {share:.1%} of the load without it"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
