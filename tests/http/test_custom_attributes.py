"""Per-request outputs over HTTP with real models: X-Amzn-SageMaker-Custom-Attributes
``outputs=...`` on /invocations (an exact route), /endpoints/<name>/invocations (a pattern),
multi-model invoke and batch mode; the answer names the outputs it holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
import xgboost as xgb
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.media import CSV, JSON, JSONLINES
from smserve.repository import runtime
from smserve.sagemaker.api import CUSTOM_ATTRIBUTES_HEADER, TARGET_HEADER

ROWS = np.random.default_rng(3).normal(size=(5, 4)).astype(np.float32)
BODY = "\n".join(",".join(repr(float(v)) for v in row) for row in ROWS).encode() + b"\n"
PATHS = ["/invocations", "/endpoints/my-endpoint/invocations"]


def _client(model_dir: Path, **environ: str) -> FlaskClient:
    settings = Settings.from_env({"SM_MODEL_DIR": str(model_dir), **environ})
    return create_app(settings).test_client()


def _post(
    client: FlaskClient, path: str, attributes: str | None, accept: str = JSON
) -> TestResponse:
    headers = {"Accept": accept}
    if attributes is not None:
        headers[CUSTOM_ATTRIBUTES_HEADER] = attributes
    return client.post(path, data=BODY, content_type=CSV, headers=headers)


def _margin(model_dir: Path) -> np.ndarray:
    booster = xgb.Booster()
    booster.load_model(bytearray((model_dir / "xgboost-model").read_bytes()))
    return np.asarray(booster.inplace_predict(ROWS, predict_type="margin"))


@pytest.mark.parametrize("path", PATHS)
def test_outputs_attribute_selects_the_outputs_and_the_answer_names_them(
    xgb_binary_dir: Path, path: str
) -> None:
    response = _post(_client(xgb_binary_dir), path, "trace=1;outputs=score,contributions")
    assert response.status_code == 200
    assert response.headers[CUSTOM_ATTRIBUTES_HEADER] == "outputs=score,contributions"
    rows = response.get_json()["predictions"]
    assert list(rows[0]) == ["score", "contributions"]
    sums = np.array([row["contributions"] for row in rows]).sum(axis=1)
    np.testing.assert_allclose(sums, _margin(xgb_binary_dir), atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_without_outputs_the_endpoint_default_applies_and_is_named(
    xgb_binary_dir: Path, path: str
) -> None:
    client = _client(xgb_binary_dir, SAGEMAKER_INFERENCE_OUTPUT="predicted_label,probability")
    for attributes in (None, "some-opaque-trace-id"):
        response = _post(client, path, attributes)
        assert response.status_code == 200
        assert response.headers[CUSTOM_ATTRIBUTES_HEADER] == "outputs=predicted_label,probability"
        assert list(response.get_json()["predictions"][0]) == ["predicted_label", "probability"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("attributes", "fragment"),
    [
        ("outputs=score,why", "unknown outputs: why; valid outputs for this model: score, "),
        ("outputs=probabilities", "valid outputs for this model: score, predicted_score"),
        ("outputs=", "'outputs=' is empty or malformed"),
        ("outputs", "'outputs' is empty or malformed"),
        ("outputs=score,,contributions", "malformed"),
    ],
)
def test_malformed_or_unknown_outputs_are_a_400_listing_the_valid_keys(
    xgb_regression_dir: Path, path: str, attributes: str, fragment: str
) -> None:
    response = _post(_client(xgb_regression_dir), path, attributes)
    assert response.status_code == 400
    body = response.get_json()
    assert set(body) == {"error", "message"}
    assert fragment in body["message"]
    assert "valid outputs for this model: score, " in body["message"]
    assert "contributions, approximate_contributions" in body["message"]
    assert CUSTOM_ATTRIBUTES_HEADER not in response.headers


@pytest.mark.parametrize(
    "attributes", [None, "outputs=contributions,predicted_label", "outputs=nope", "outputs="]
)
@pytest.mark.parametrize("accept", [JSON, CSV])
def test_fast_path_answers_as_flask_does(
    xgb_multiclass_dir: Path, attributes: str | None, accept: str
) -> None:
    client = _client(xgb_multiclass_dir)
    fast, flask = (_post(client, path, attributes, accept) for path in PATHS)
    assert fast.status_code == flask.status_code
    assert list(fast.headers.items()) == list(flask.headers.items())
    assert fast.data == flask.data


def test_multiclass_csv_appends_a_block_of_columns_per_class(xgb_multiclass_dir: Path) -> None:
    response = _post(
        _client(xgb_multiclass_dir), PATHS[0], "outputs=predicted_label,contributions", CSV
    )
    lines = response.data.decode().splitlines()
    assert len(lines) == len(ROWS)
    cells = [line.split(",") for line in lines]
    assert {len(row) for row in cells} == {1 + 3 * 5}  # the label, then 3 classes x (4 + bias)
    values = np.array([[float(v) for v in row[1:]] for row in cells]).reshape(-1, 3, 5)
    np.testing.assert_allclose(values.sum(axis=2), _margin(xgb_multiclass_dir), atol=1e-5)


def test_batch_mode_writes_one_line_per_record_with_the_requested_outputs(
    xgb_multiclass_dir: Path,
) -> None:
    client = _client(xgb_multiclass_dir, SAGEMAKER_BATCH="true")
    response = _post(client, PATHS[0], "outputs=approximate_contributions", JSONLINES)
    assert response.status_code == 200
    assert response.headers[CUSTOM_ATTRIBUTES_HEADER] == "outputs=approximate_contributions"
    lines = response.data.splitlines()
    assert len(lines) == len(ROWS)
    values = np.array([orjson.loads(line)["approximate_contributions"] for line in lines])
    assert values.shape == (len(ROWS), 3, 5)
    np.testing.assert_allclose(values.sum(axis=2), _margin(xgb_multiclass_dir), atol=1e-5)


@pytest.fixture
def mme_client(tmp_path: Path, kmeans_model_dir: Path) -> FlaskClient:
    shutil.copytree(kmeans_model_dir, tmp_path / "models" / "alpha" / "model")
    settings = Settings(
        multi_model=True, models_dir=tmp_path / "models", runtime_dir=tmp_path / "run"
    )
    client = create_app(runtime.prepare(settings)).test_client()
    loaded = client.post("/models", json={"model_name": "alpha", "url": "alpha/model"})
    assert loaded.status_code == 200
    return client


@pytest.mark.parametrize("how", ["invoke", "target-header"])
def test_multi_model_invoke_takes_the_outputs_attribute(mme_client: FlaskClient, how: str) -> None:
    headers = {
        CUSTOM_ATTRIBUTES_HEADER: "outputs=contributions,distance_to_cluster",
        "Accept": JSON,
    }
    row = b"3,4,0,0\n"  # closest to centroid 0 (the origin)
    if how == "invoke":
        response = mme_client.post(
            "/models/alpha/invoke", data=row, content_type=CSV, headers=headers
        )
    else:
        headers[TARGET_HEADER] = "alpha"
        response = mme_client.post("/invocations", data=row, content_type=CSV, headers=headers)
    assert response.status_code == 200
    assert response.headers[CUSTOM_ATTRIBUTES_HEADER] == "outputs=contributions,distance_to_cluster"
    assert response.get_json() == {
        "predictions": [{"contributions": [9.0, 16.0, 0.0, 0.0], "distance_to_cluster": 5.0}]
    }


def test_multi_model_unknown_outputs_list_that_models_keys(mme_client: FlaskClient) -> None:
    response = mme_client.post(
        "/models/alpha/invoke",
        data=b"0,0,0,0\n",
        content_type=CSV,
        headers={CUSTOM_ATTRIBUTES_HEADER: "outputs=score"},
    )
    assert response.status_code == 400
    assert response.get_json()["message"].endswith(
        "closest_cluster, distance_to_cluster, contributions"
    )
