"""The synthesized ``explain`` signature: listed in /metadata with the feature names, and
answered by :predict with the default outputs plus the contributions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.tfserving.servable import build_servable
from tests.tfserving.fakes import FakeXGBoost, served

ROWS = np.random.default_rng(11).normal(size=(3, 4)).astype(np.float32)


def _client(model_dir: Path) -> FlaskClient:
    return create_app(Settings.from_env({"SM_MODEL_DIR": str(model_dir)})).test_client()


def _margin(model_dir: Path) -> np.ndarray:
    booster = xgb.Booster()
    booster.load_model(bytearray((model_dir / "xgboost-model").read_bytes()))
    return np.asarray(booster.inplace_predict(ROWS, predict_type="margin"))


def test_metadata_lists_the_explain_signature_and_the_feature_names(
    xgb_multiclass_dir: Path,
) -> None:
    metadata = _client(xgb_multiclass_dir).get("/v1/models/model/metadata").get_json()
    assert metadata["metadata"]["feature_names"] == ["f0", "f1", "f2", "f3"]
    explain = metadata["metadata"]["signature_def"]["signature_def"]["explain"]
    assert explain["method_name"] == "tensorflow/serving/predict"
    assert list(explain["outputs"]) == ["score", "contributions", "approximate_contributions"]
    dims = explain["outputs"]["contributions"]["tensor_shape"]["dim"]
    assert [d["size"] for d in dims] == ["-1", "3", "5"]  # classes x (features + bias)
    assert explain["inputs"]["inputs"]["tensor_shape"]["dim"][1]["size"] == "4"


@pytest.mark.parametrize("form", ["instances", "inputs"])
def test_predict_with_the_explain_signature_returns_contributions(
    xgb_multiclass_dir: Path, form: str
) -> None:
    body = {"signature_name": "explain", form: ROWS.tolist()}
    response = _client(xgb_multiclass_dir).post("/v1/models/model:predict", json=body)
    assert response.status_code == 200
    answer = response.get_json()
    if form == "instances":
        contributions = np.array([row["contributions"] for row in answer["predictions"]])
    else:
        contributions = np.array(answer["outputs"]["contributions"])
    assert contributions.shape == (3, 3, 5)
    # TF Serving writes floats with 9 significant digits
    np.testing.assert_allclose(contributions.sum(axis=2), _margin(xgb_multiclass_dir), atol=1e-5)


def test_serving_default_is_unchanged(xgb_multiclass_dir: Path) -> None:
    body = {"instances": ROWS.tolist()}
    answer = _client(xgb_multiclass_dir).post("/v1/models/model:predict", json=body).get_json()
    # one output: TF Serving writes each row's value itself, not an object
    assert np.array(answer["predictions"]).shape == (3, 3)


def test_kmeans_explain_adds_contributions_to_its_outputs(kmeans_model_dir: Path) -> None:
    client = _client(kmeans_model_dir)
    body = {"signature_name": "explain", "instances": [[3.0, 4.0, 0.0, 0.0]]}
    answer = client.post("/v1/models/model:predict", json=body).get_json()
    assert answer["predictions"] == [
        {"closest_cluster": 0.0, "distance_to_cluster": 5.0, "contributions": [9.0, 16.0, 0.0, 0.0]}
    ]


def test_models_with_fixed_outputs_have_no_explain_signature() -> None:
    servable = build_servable(served(FakeXGBoost("binary:logistic")))
    assert "explain" not in servable.signatures
