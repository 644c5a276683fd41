"""gblinear models answer on every door, explanations included: XGBoost has no inplace prediction
for them ("Inplace predict is not supported by the current booster"), so the algorithm asks a
DMatrix prediction instead, with the same values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.config import Settings
from smserve.http.app import create_app
from smserve.types import Batch

X = np.random.default_rng(5).normal(size=(200, 4)).astype(np.float32)


def _linear(model_dir: Path, objective: str) -> xgb.Booster:
    labels = np.digitize(X[:, 0], [-0.5, 0.5]) if objective.startswith("multi") else X[:, 0] > 0
    params = {"objective": objective, "booster": "gblinear", "nthread": 1}
    if objective.startswith("multi"):
        params["num_class"] = 3
    booster = xgb.train(params, xgb.DMatrix(X, label=labels), num_boost_round=5)
    model_dir.mkdir()
    (model_dir / "xgboost-model").write_bytes(bytes(booster.save_raw("ubj")))
    return booster


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob", "reg:squarederror"])
@pytest.mark.parametrize("n_rows", [1, 100])
def test_every_output_of_a_linear_model(tmp_path: Path, objective: str, n_rows: int) -> None:
    booster = _linear(tmp_path / "model", objective)
    model = XGBoost.load(Settings(cpu_count=2), tmp_path / "model")
    rows = X[:n_rows]
    expected = booster.predict(xgb.DMatrix(rows))
    for features in (rows, sp.csr_matrix(rows)):
        for key in model.output_keys:
            assert model.predict(Batch(features), (key,)).outputs[key].shape[0] == n_rows
        np.testing.assert_array_equal(model.predict(Batch(features)).outputs["score"], expected)
    contributions = booster.predict(xgb.DMatrix(rows), pred_contribs=True)
    found = model.predict(Batch(rows), ("contributions",)).outputs["contributions"]
    np.testing.assert_array_equal(found, contributions)


def test_a_linear_model_answers_on_the_sagemaker_and_tf_serving_doors(tmp_path: Path) -> None:
    booster = _linear(tmp_path / "model", "binary:logistic")
    client = create_app(Settings.from_env({"SM_MODEL_DIR": str(tmp_path / "model")})).test_client()
    body = "\n".join(",".join(f"{v:.6f}" for v in row) for row in X[:3])
    answer = client.post("/invocations", data=body, content_type="text/csv")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    parsed = np.array([float(v) for v in answer.get_data(as_text=True).split()])
    rows = np.array([[float(f"{v:.6f}") for v in row] for row in X[:3]], dtype=np.float32)
    np.testing.assert_allclose(parsed, booster.predict(xgb.DMatrix(rows)), rtol=1e-6)
    explained = client.post(
        "/v1/models/model:predict", json={"signature_name": "explain", "inputs": X[:3].tolist()}
    )
    assert explained.status_code == 200, explained.get_data(as_text=True)
    contributions = np.array(explained.get_json()["outputs"]["contributions"])
    assert contributions.shape == (3, 5)
