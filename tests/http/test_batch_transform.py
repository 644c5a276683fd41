"""Batch Transform (SAGEMAKER_BATCH=true) through the real app and a real XGBoost model:
exactly one output line per input record, in input order, whatever the Accept."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import orjson
import pytest
import xgboost as xgb
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.media import CSV, JSON, JSONLINES, RECORDIO
from tests.unit.codecs.recordio_bodies import dense_body

ROWS = np.random.default_rng(7).normal(size=(37, 4)).astype(np.float32)


@pytest.fixture
def batch_client(xgb_multiclass_dir: Path) -> FlaskClient:
    settings = Settings.from_env(
        {"SM_MODEL_DIR": str(xgb_multiclass_dir), "SAGEMAKER_BATCH": "true"}
    )
    return create_app(settings).test_client()


@pytest.fixture
def expected(xgb_multiclass_dir: Path) -> np.ndarray:
    booster = xgb.Booster()
    booster.load_model(bytearray((xgb_multiclass_dir / "xgboost-model").read_bytes()))
    return np.asarray(booster.inplace_predict(ROWS), dtype=np.float32)


def _csv(rows: np.ndarray) -> bytes:
    return "\n".join(",".join(repr(float(v)) for v in row) for row in rows).encode()


def _jsonlines(rows: np.ndarray) -> bytes:
    return b"\n".join(orjson.dumps({"features": row.tolist()}) for row in rows) + b"\n"


def _scores(body: bytes, accept: str) -> np.ndarray:
    lines = body.decode().splitlines()
    if accept == CSV:
        return np.array([[float(v) for v in line.split(",")] for line in lines])
    return np.array([orjson.loads(line)["score"] for line in lines])


@pytest.mark.parametrize("accept", [CSV, JSON, JSONLINES])
@pytest.mark.parametrize("content_type", [CSV, JSONLINES])
def test_one_output_line_per_input_line_in_order(
    batch_client: FlaskClient, expected: np.ndarray, content_type: str, accept: str
) -> None:
    body = _csv(ROWS) if content_type == CSV else _jsonlines(ROWS)
    response = batch_client.post(
        "/invocations", data=body, headers={"Content-Type": content_type, "Accept": accept}
    )
    assert response.status_code == 200, response.data
    assert response.headers["Content-Type"] == accept
    assert response.data.count(b"\n") == len(ROWS)
    assert response.data.endswith(b"\n")
    np.testing.assert_allclose(_scores(response.data, accept), expected, rtol=1e-6)


def test_recordio_gives_one_record_per_record(
    batch_client: FlaskClient, expected: np.ndarray
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from sagemaker.amazon.common import read_records  # type: ignore[import-untyped]

    response = batch_client.post(
        "/invocations",
        data=dense_body(ROWS.tolist()),
        headers={"Content-Type": RECORDIO, "Accept": RECORDIO},
    )
    assert response.status_code == 200, response.data
    records = read_records(io.BytesIO(response.data))
    scores = np.array([list(r.label["score"].float32_tensor.values) for r in records])
    np.testing.assert_allclose(scores, expected, rtol=1e-6)


def test_a_blank_line_inside_a_batch_is_a_400_not_a_shifted_output(
    batch_client: FlaskClient,
) -> None:
    body = _csv(ROWS[:2]) + b"\n\n" + _csv(ROWS[2:4]) + b"\n"
    response = batch_client.post("/invocations", data=body, content_type=CSV)
    assert response.status_code == 400
    assert "line 3 is empty" in response.get_json()["error"]


def test_execution_parameters_reflect_the_batch_settings(xgb_binary_dir: Path) -> None:
    settings = Settings.from_env(
        {
            "SM_MODEL_DIR": str(xgb_binary_dir),
            "SAGEMAKER_BATCH": "true",
            "SAGEMAKER_MAX_PAYLOAD_IN_MB": "20",
            "SAGEMAKER_BATCH_STRATEGY": "SINGLE_RECORD",
            "SAGEMAKER_MAX_CONCURRENT_TRANSFORMS": "3",
        }
    )
    response = create_app(settings).test_client().get("/execution-parameters")
    assert response.get_json() == {
        "MaxConcurrentTransforms": 3,
        "BatchStrategy": "SINGLE_RECORD",
        "MaxPayloadInMB": 20,
    }
