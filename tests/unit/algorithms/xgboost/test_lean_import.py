"""A fresh process that loads an XGBoost model imports neither scikit-learn, pandas nor
scipy.special for it, and can still import them afterwards; one that loads k-means never
imports XGBoost; a pickled scikit-learn wrapper (opted in) still loads and predicts. Each case
runs in a new interpreter, since this test process has imported everything already."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import xgboost as xgb

LOAD_AND_REPORT = """
import json, sys
import numpy as np
from smserve.algorithms.loading import load_algorithm
from smserve.config import Settings
from smserve.types import Batch

from pathlib import Path
settings = Settings(model_dir=Path(sys.argv[1]), allow_pickle=True, xgboost_device="cpu")
algorithm = load_algorithm(settings)
rows = np.asarray(json.loads(sys.argv[2]), dtype=np.float32)
first = next(iter(algorithm.predict(Batch(rows)).outputs.values()))
loaded = {
    name: name in sys.modules
    for name in ("xgboost", "sklearn", "pandas", "scipy.special", "numpy.f2py", "numpy.testing")
}
import pandas, scipy.special, sklearn  # still importable afterwards
print(json.dumps({"loaded": loaded, "first": np.asarray(first, dtype=float).tolist()}))
"""


def _fresh_process(model_dir: Path, rows: np.ndarray) -> dict[str, object]:
    command = [sys.executable, "-c", LOAD_AND_REPORT, str(model_dir), json.dumps(rows.tolist())]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_an_xgboost_model_loads_without_sklearn_pandas_or_scipy_special(
    xgb_binary_dir: Path, model_features: np.ndarray
) -> None:
    report = _fresh_process(xgb_binary_dir, model_features[:5])
    assert report["loaded"] == {
        "xgboost": True,
        "sklearn": False,
        "pandas": False,
        "scipy.special": False,
        "numpy.f2py": False,  # scipy.sparse, XGBoost's import, through smserve.scipy_sparse
        "numpy.testing": False,
    }
    booster = xgb.Booster()
    booster.load_model(bytearray((xgb_binary_dir / "xgboost-model").read_bytes()))
    expected = booster.predict(xgb.DMatrix(model_features[:5]))
    np.testing.assert_allclose(np.asarray(report["first"]), expected, rtol=1e-6)


def test_a_kmeans_model_never_imports_xgboost(
    kmeans_model_dir: Path, model_features: np.ndarray
) -> None:
    report = _fresh_process(kmeans_model_dir, model_features[:3])
    assert report["loaded"]["xgboost"] is False  # type: ignore[index]


def test_a_pickled_sklearn_wrapper_still_loads_with_opt_in(
    tmp_path: Path, model_features: np.ndarray
) -> None:
    model = xgb.XGBRegressor(n_estimators=3, max_depth=2, n_jobs=1)
    model.fit(model_features, model_features[:, 0])
    (tmp_path / "xgboost-model").write_bytes(pickle.dumps(model))
    report = _fresh_process(tmp_path, model_features[:4])
    np.testing.assert_allclose(
        np.asarray(report["first"]), model.predict(model_features[:4]), rtol=1e-6
    )
