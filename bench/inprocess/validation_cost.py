"""What the load-time checks (``xgboost.validation``: the document decoded whole, every tree
checked, then handed to XGBoost) add to loading the 1,000-tree depth-8 bench model
(bench/shared/harness.py ``build_big``), as JSON and as UBJSON. In alternating rounds: the
whole ``XGBoost.load`` as shipped, and the same load with the checks taken out (XGBoost given
the file's bytes, as before there were checks); the fast predictor off in both, since it builds
in the background. The best of each; the share is (checked - unchecked) / unchecked. A JSON
model's checked load is the faster: the checks' parse replaces XGBoost's (``reencoded``).

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
from smserve.algorithms.xgboost import model  # noqa: E402
from smserve.algorithms.xgboost.algorithm import XGBoost  # noqa: E402
from smserve.config import Settings  # noqa: E402

CHECKED = model.validate


def unchecked(path: Path, data: bytes) -> bytes:
    return data


def timed(checks: Callable[[Path, bytes], bytes], model_dir: Path, rounds: list[float]) -> None:
    model.validate = checks  # type: ignore[assignment]  # the one thing that differs
    try:
        start = time.perf_counter()
        XGBoost.load(Settings(fast_predictor="off"), model_dir)
        rounds.append(time.perf_counter() - start)
    finally:
        model.validate = CHECKED  # type: ignore[assignment]


def measure(model_dir: Path, rounds: int) -> tuple[float, float]:
    checked: list[float] = []
    plain: list[float] = []
    for _ in range(rounds):
        timed(CHECKED, model_dir, checked)
        timed(unchecked, model_dir, plain)
    return min(checked), min(plain)


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
            checked, plain = measure(folder, args.rounds)
            print(
                f"{name:6s} {size / 2**20:5.1f} MiB: load {checked:.3f} s checked, "
                f"{plain:.3f} s unchecked: the checks add {(checked - plain) / plain:+.1%}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
