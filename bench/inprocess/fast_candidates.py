"""The candidates for a fast XGBoost predictor, side by side on one thread: XGBoost's
``inplace_predict``, smserve's fast predictor, treelite's GTIL, TL2cgen (the model compiled to
C with gcc) and ONNX Runtime (onnxmltools' conversion). Per model and batch size: the median
time of one prediction of probabilities, its ratio to ``inplace_predict``, and the largest
difference from ``inplace_predict``'s answer (0 = the same bits).

treelite, tl2cgen, onnxruntime and onnxmltools are not smserve dependencies; install them
into a separate environment and point it at the models ``fast_predictor.py --models`` keeps:

    pip install xgboost==3.2.0 treelite tl2cgen onnxruntime onnxmltools orjson scipy
    flock /tmp/smserve-bench.lock env PYTHONPATH=src \\
        python bench/inprocess/fast_candidates.py MODELS
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xgboost as xgb

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared.timing import median_s  # noqa: E402

SIZES = (1, 10, 100, 1000, 10000)
Predict = Callable[[np.ndarray], np.ndarray]


def candidates(path: Path, booster: xgb.Booster, scratch: Path) -> dict[str, Predict]:
    found: dict[str, Predict] = {"inplace_predict": lambda x: booster.inplace_predict(x)}
    for name, make in (
        ("smserve fast", _smserve),
        ("GTIL", _gtil),
        ("TL2cgen", _tl2cgen),
        ("ONNX Runtime", _onnx),
    ):
        start = time.perf_counter()
        try:
            found[name] = make(path, booster, scratch)
        except ImportError as exc:
            print(f"  {name}: not installed ({exc.name})")
            continue
        print(f"  {name}: ready in {time.perf_counter() - start:.2f} s")
    return found


def _smserve(path: Path, booster: xgb.Booster, scratch: Path) -> Predict:
    from smserve.algorithms.xgboost.fast import FastPredictor
    from smserve.algorithms.xgboost.fast_trees import flat_trees

    fast = FastPredictor(flat_trees(booster, (0, 0)))
    return lambda x: fast.predict(x, False)


def _gtil(path: Path, booster: xgb.Booster, scratch: Path) -> Predict:
    import treelite

    model = treelite.frontend.from_xgboost(booster)
    return lambda x: treelite.gtil.predict(model, x, nthread=1).reshape(-1)


def _tl2cgen(path: Path, booster: xgb.Booster, scratch: Path) -> Predict:
    import tl2cgen
    import treelite

    model = treelite.frontend.from_xgboost(booster)
    library = scratch / f"{path.parent.name}.so"
    tl2cgen.export_lib(
        model, toolchain="gcc", libpath=str(library), params={"parallel_comp": 8}, nthread=1
    )
    predictor = tl2cgen.Predictor(str(library), nthread=1)
    return lambda x: predictor.predict(tl2cgen.DMatrix(x, missing=np.nan)).reshape(-1)


def _onnx(path: Path, booster: xgb.Booster, scratch: Path) -> Predict:
    import onnxmltools
    import onnxruntime as ort
    from onnxmltools.convert.common.data_types import FloatTensorType

    classifier = xgb.XGBClassifier()
    classifier.load_model(str(path))
    width = booster.num_features()
    onnx_model = onnxmltools.convert_xgboost(
        classifier, initial_types=[("input", FloatTensorType([None, width]))], target_opset=15
    )
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        onnx_model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return lambda x: session.run(None, {"input": x})[1][:, 1]


def report(path: Path, budget_s: float, scratch: Path) -> None:
    booster = xgb.Booster()
    booster.load_model(bytearray(path.read_bytes()))
    booster.set_param({"nthread": 1})
    shape = f"{booster.num_boosted_rounds()} trees, {booster.num_features()} features"
    print(f"\n{path.parent.name}: {shape}")
    found = candidates(path, booster, scratch)
    print("  rows   | " + " | ".join(f"{name:>26}" for name in found))
    for size in SIZES:
        x = np.random.default_rng(size).normal(size=(size, booster.num_features()))
        x = x.astype(np.float32)
        x[np.random.default_rng(1).random(x.shape) < 0.05] = np.nan
        print(f"  {size:6d} | " + " | ".join(_cells(found, x, budget_s)))


def _cells(found: dict[str, Predict], x: np.ndarray, budget_s: float) -> list[str]:
    reference = found["inplace_predict"]
    expected = np.asarray(reference(x), dtype=np.float64)
    base = median_s(lambda: reference(x), budget_s)
    cells = []
    for predict in found.values():
        seconds = median_s(lambda p=predict: p(x), budget_s)
        difference = float(np.max(np.abs(np.asarray(predict(x), dtype=np.float64) - expected)))
        cells.append(f"{seconds * 1e3:8.4f} ms {base / seconds:5.1f}x d={difference:.0e}")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", type=Path, help="the --models folder of fast_predictor.py")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smserve-candidates-") as scratch:
        for name in ("bench", "big"):
            report(args.models / name / "xgboost-model", args.budget, Path(scratch))


if __name__ == "__main__":
    main()
