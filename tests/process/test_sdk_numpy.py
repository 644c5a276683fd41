"""application/x-npy with the real SageMaker Python SDK (2.x): its ``NumpySerializer`` and
``NumpyDeserializer`` (defaults: ``np.save`` bytes out, ``Accept: application/x-npy``) on a
stock ``Predictor``, through the local-mode client and through boto3, against a real
``smserve serve`` for k-means and XGBoost; answers equal to in-process predictions."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms.ndarray import read_ndarray_file, write_ndarray_file
from tests.process import sdk_clients as sdk
from tests.process.sdk_clients import Predictor
from tests.process.sdk_clients import deserializers as des
from tests.process.sdk_clients import serializers as ser
from tests.process.servers import Server, running_server

pytestmark = [pytest.mark.sdk, pytest.mark.process]

NPY = "application/x-npy"


@pytest.fixture(scope="module")
def kmeans_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model_dir = tmp_path_factory.mktemp("kmeans-model")
    centroids = np.random.default_rng(21).uniform(-8, 8, (4, 4)).astype(np.float32)
    write_ndarray_file(model_dir / "model_algo-1", centroids)
    return model_dir


@pytest.fixture(scope="module")
def kmeans(tmp_path_factory: pytest.TempPathFactory, kmeans_dir: Path) -> Iterator[Server]:
    logs = tmp_path_factory.mktemp("npy-kmeans-logs")
    with running_server(logs, {"SM_MODEL_DIR": str(kmeans_dir)}) as server:
        yield server


@pytest.fixture(scope="module")
def xgboost(tmp_path_factory: pytest.TempPathFactory, xgb_model_dir: Path) -> Iterator[Server]:
    logs = tmp_path_factory.mktemp("npy-xgb-logs")
    with running_server(logs, {"SM_MODEL_DIR": str(xgb_model_dir)}) as server:
        yield server


def booster(model_dir: Path) -> object:
    import xgboost as xgb

    model = bytearray((model_dir / "xgboost-model").read_bytes())
    return xgb.Booster(params={"nthread": 1}, model_file=model)


def test_sdk_defaults_are_npy_both_ways() -> None:
    assert ser.NumpySerializer().CONTENT_TYPE == NPY
    assert des.NumpyDeserializer().ACCEPT == (NPY,)


def test_numpy_predictor_kmeans_local_client(
    kmeans: Server, kmeans_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk.patch_docker_host(monkeypatch)
    centroids = read_ndarray_file(kmeans_dir / "model_algo-1")
    features = sdk.near_centroids(centroids, n=9)  # float64, as a user's array usually is
    predictor = sdk.local_predictor(
        Predictor,
        kmeans.port,
        serializer=ser.NumpySerializer(),
        deserializer=des.NumpyDeserializer(),
    )
    answer = predictor.predict(features)
    clusters, distances = sdk.nearest(centroids, features)
    assert answer.shape == (9, 2)
    assert answer.dtype == np.float32
    np.testing.assert_array_equal(answer[:, 0], clusters)
    np.testing.assert_allclose(answer[:, 1], distances, rtol=1e-5, atol=1e-5)


def test_numpy_predictor_xgboost_stock_env(
    xgboost: Server, xgb_model_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sdk.use_stock_aws_env(monkeypatch, tmp_path, xgboost.port)
    predictor = Predictor(
        "my-xgb", sdk.stock_session(), ser.NumpySerializer(), des.NumpyDeserializer()
    )
    features = sdk.xgb_features(n=12, seed=8)
    answer = predictor.predict(features)
    assert answer.shape == (12,)
    assert answer.dtype == np.float32
    expected = sdk.scores(booster(xgb_model_dir), features)[:, 0]
    np.testing.assert_array_equal(answer.astype(np.float64), expected)


def test_one_row_and_fortran_order_and_npy_to_csv(xgboost: Server, xgb_model_dir: Path) -> None:
    features = np.asfortranarray(sdk.xgb_features(n=5, seed=9).astype(np.float64))
    expected = sdk.scores(booster(xgb_model_dir), features.astype(np.float32))[:, 0]
    body = sdk.serialized(ser.NumpySerializer(), features)
    response = sdk.post(xgboost.port, body, NPY, "text/csv")
    assert response.status_code == 200, response.text
    np.testing.assert_array_equal(np.loadtxt(io.StringIO(response.text)), expected)
    one_row = sdk.serialized(ser.NumpySerializer(), features[0])  # a 1-D array: one row
    answer = np.load(io.BytesIO(sdk.post(xgboost.port, one_row, NPY, NPY).content))
    np.testing.assert_array_equal(answer.astype(np.float64), expected[:1])


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'", 400, "not a readable .npy"),
        (
            b"\x93NUMPY\x01\x00\x48\x00{'descr': '<f4', 'fortran_order': False, "
            b"'shape': (1000000000000, 4), }\n",
            413,
            "needs 16000000000000 bytes",
        ),
    ],
)
def test_hostile_npy_is_a_json_client_error(
    xgboost: Server, body: bytes, status: int, words: str
) -> None:
    response = sdk.post(xgboost.port, body, NPY, NPY)
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/json"
    assert words in response.json()["message"]
