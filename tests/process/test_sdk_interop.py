"""Interoperability with real clients: the SageMaker Python SDK (2.x) serializers,
deserializers and predictors, and stock boto3, against a real ``smserve serve`` (gunicorn).

Three servers for the whole module (k-means, XGBoost binary:logistic, XGBoost
multi:softprob). Every answer is compared with an in-process reference: a brute-force numpy
nearest centroid over the centroids read back from ``model_algo-1``, and ``xgboost`` on the
same model file and the same float32 (or CSR) features."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import urllib3
from botocore.exceptions import ClientError

from smserve.algorithms.ndarray import read_ndarray_file, write_ndarray_file
from tests.process import sdk_clients as sdk
from tests.process.sdk_clients import KMeansPredictor, Predictor, XGBoostPredictor
from tests.process.sdk_clients import deserializers as des
from tests.process.sdk_clients import serializers as ser
from tests.process.servers import running_server

pytestmark = [pytest.mark.sdk, pytest.mark.process]

RECORDIO = sdk.RECORDIO
ACCEPTS = ("application/json", "application/jsonlines", "text/csv", RECORDIO)


@dataclass(frozen=True)
class Served:
    port: int
    reference: Any  # k-means: centroids read from the model file; XGBoost: its Booster


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sdk-interop-logs")


@pytest.fixture(scope="module")
def kmeans(tmp_path_factory: pytest.TempPathFactory, logs: Path) -> Iterator[Served]:
    model_dir = tmp_path_factory.mktemp("kmeans-model")
    rng = np.random.default_rng(11)
    write_ndarray_file(model_dir / "model_algo-1", rng.uniform(-8, 8, (5, 4)).astype(np.float32))
    centroids = read_ndarray_file(model_dir / "model_algo-1")
    with running_server(logs, {"SM_MODEL_DIR": str(model_dir)}) as server:
        yield Served(server.port, centroids)


def _xgboost(kind: str, models: dict[str, bytes], tmp: Path, logs: Path) -> Iterator[Served]:
    import xgboost as xgb

    (tmp / "xgboost-model").write_bytes(models[kind])
    model = bytearray((tmp / "xgboost-model").read_bytes())  # no extension: pass the bytes
    booster = xgb.Booster(params={"nthread": 1}, model_file=model)
    with running_server(logs, {"SM_MODEL_DIR": str(tmp)}) as server:
        yield Served(server.port, booster)


@pytest.fixture(scope="module")
def binary(
    _xgb_models: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory, logs: Path
) -> Iterator[Served]:
    yield from _xgboost("binary", _xgb_models, tmp_path_factory.mktemp("xgb-binary"), logs)


@pytest.fixture(scope="module")
def multiclass(
    _xgb_models: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory, logs: Path
) -> Iterator[Served]:
    yield from _xgboost("multiclass", _xgb_models, tmp_path_factory.mktemp("xgb-multi"), logs)


# --- RecordIO-protobuf: the SDK's writers and reader ------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_record_serializer_kmeans(kmeans: Served, dtype: type) -> None:
    features = sdk.near_centroids(kmeans.reference)
    features = np.round(features) if dtype is np.int64 else features
    features = features.astype(dtype)
    records, response = sdk.round_trip(
        kmeans.port, ser.RecordSerializer(), des.RecordDeserializer(), features
    )
    assert response.headers["Content-Type"] == RECORDIO
    assert len(records) == len(features)
    sdk.assert_kmeans(records, kmeans.reference, features)


def _sparse(seed: int) -> sp.csr_matrix:
    """float32 CSR, ~half the cells absent, row 2 empty, no stored zeros."""
    rng = np.random.default_rng(seed)
    dense = rng.normal(0, 4, (8, 4)).astype(np.float32)
    dense[rng.random(dense.shape) < 0.5] = 0.0
    dense[2] = 0.0
    return sp.csr_matrix(dense)


def test_sparse_records_kmeans_equal_dense(kmeans: Served) -> None:
    matrix = _sparse(seed=1)
    body = sdk.sparse_records(matrix)
    response = sdk.post(kmeans.port, body, RECORDIO, RECORDIO)
    assert (response.status_code, response.headers["Content-Type"]) == (200, RECORDIO)
    sparse = des.RecordDeserializer().deserialize(io.BytesIO(response.content), RECORDIO)
    dense, _ = sdk.round_trip(
        kmeans.port, ser.RecordSerializer(), des.RecordDeserializer(), matrix.toarray()
    )
    sdk.assert_kmeans(sparse, kmeans.reference, matrix)  # absent means 0 for k-means
    np.testing.assert_array_equal(sdk.kmeans_outputs(sparse), sdk.kmeans_outputs(dense))


def test_sparse_records_xgboost_absent_is_missing(binary: Served) -> None:
    matrix = _sparse(seed=2)
    response = sdk.post(binary.port, sdk.sparse_records(matrix), RECORDIO, "text/csv")
    assert (response.status_code, response.headers["Content-Type"]) == (200, "text/csv")
    rows = des.CSVDeserializer().deserialize(io.BytesIO(response.content), "text/csv")
    got = sdk.csv_numbers(rows)
    np.testing.assert_array_equal(got, sdk.scores(binary.reference, matrix))
    with_nan = np.where(matrix.toarray() == 0, np.nan, matrix.toarray())
    np.testing.assert_array_equal(got, sdk.scores(binary.reference, with_nan))
    # The model tells missing from 0 on these rows, so the check above has teeth.
    assert not np.array_equal(got, sdk.scores(binary.reference, matrix.toarray()))


# --- text formats: CSV, JSON, JSON Lines, libsvm ------------------------------------------------


def test_csv_serializer_and_deserializer_binary(binary: Served) -> None:
    features = sdk.xgb_features()
    rows, response = sdk.round_trip(
        binary.port, ser.CSVSerializer(), des.CSVDeserializer(), features
    )
    assert response.headers["Content-Type"] == "text/csv"
    np.testing.assert_array_equal(sdk.csv_numbers(rows), sdk.scores(binary.reference, features))


def test_csv_multiclass_rows_are_comma_joined(multiclass: Served) -> None:
    features = sdk.xgb_features(seed=6)
    rows, _ = sdk.round_trip(multiclass.port, ser.CSVSerializer(), des.CSVDeserializer(), features)
    assert {len(row) for row in rows} == {3}
    np.testing.assert_array_equal(sdk.csv_numbers(rows), sdk.scores(multiclass.reference, features))


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_json_serializer_bare_lists(kind: str, request: pytest.FixtureRequest) -> None:
    served: Served = request.getfixturevalue(kind)
    features = sdk.xgb_features(seed=7)
    answer, response = sdk.round_trip(
        served.port, ser.JSONSerializer(), des.JSONDeserializer(), features
    )
    assert response.headers["Content-Type"] == "application/json"
    got = np.array([p["score"] for p in answer["predictions"]], dtype=np.float64)
    np.testing.assert_array_equal(
        got.reshape(len(features), -1), sdk.scores(served.reference, features)
    )


def test_jsonlines_serializer_and_deserializer(multiclass: Served) -> None:
    features = sdk.xgb_features(seed=8)
    instances = [{"features": row} for row in features.tolist()]
    lines, response = sdk.round_trip(
        multiclass.port, ser.JSONLinesSerializer(), des.JSONLinesDeserializer(), instances
    )
    assert response.headers["Content-Type"] == "application/jsonlines"
    got = np.array([line["score"] for line in lines], dtype=np.float64)
    np.testing.assert_array_equal(got, sdk.scores(multiclass.reference, features))


def test_xgboost_predictor_libsvm_to_csv(binary: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    # XGBoostPredictor's defaults: LibSVMSerializer in, CSVDeserializer out.
    sdk.patch_docker_host(monkeypatch)
    predictor = sdk.local_predictor(XGBoostPredictor, binary.port)
    features = sdk.xgb_features(seed=9).astype(np.float64)
    features[[1, 4], [2, 0]] = np.nan  # left out of the libsvm lines: missing
    lines = [
        "0 " + " ".join(f"{j}:{value!r}" for j, value in enumerate(row) if not np.isnan(value))
        for row in features.tolist()
    ]
    rows = predictor.predict("\n".join(lines))
    expected = sdk.scores(binary.reference, features.astype(np.float32))
    np.testing.assert_array_equal(sdk.csv_numbers(rows), expected)


# --- exact response Content-Types, read back by the SDK ---------------------------------------


def _kmeans_clusters(accept: str, answer: Any) -> list[float]:
    if accept == "application/json":
        return [p["closest_cluster"] for p in answer["predictions"]]
    if accept == "application/jsonlines":
        return [p["closest_cluster"] for p in answer]
    if accept == "text/csv":
        return [float(row[0]) for row in answer]
    return sdk.kmeans_outputs(answer)[0].tolist()


@pytest.mark.parametrize("accept", ACCEPTS)
def test_response_content_types_are_exact(kmeans: Served, binary: Served, accept: str) -> None:
    features = sdk.near_centroids(kmeans.reference, n=5).astype(np.float32)
    body = sdk.serialized(ser.CSVSerializer(), features)
    response = sdk.post(kmeans.port, body, "text/csv", accept)
    assert (response.status_code, response.headers["Content-Type"]) == (200, accept)
    answer = sdk.read_with_sdk(accept, response.content, response.headers["Content-Type"])
    assert _kmeans_clusters(accept, answer) == sdk.nearest(kmeans.reference, features)[0].tolist()

    error = sdk.post(binary.port, b"1,2\n", "text/csv", accept)  # 2 features, not 4
    assert (error.status_code, error.headers["Content-Type"]) == (400, "application/json")
    assert "feature" in error.json()["error"]


def test_numpy_and_pandas_deserializers_stock_predictor(
    multiclass: Served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Through botocore the deserializer gets the response's Content-Type header as is, and
    # both match it exactly: "text/csv; charset=utf-8" would be a ValueError here.
    sdk.use_stock_aws_env(monkeypatch, tmp_path, multiclass.port)
    session = sdk.stock_session()
    features = sdk.xgb_features(seed=12)
    expected = sdk.scores(multiclass.reference, features)

    numpy_reader = des.NumpyDeserializer(accept="text/csv")
    predictor = Predictor("my-xgb", session, ser.CSVSerializer(), numpy_reader)
    np.testing.assert_array_equal(predictor.predict(features), expected)

    pandas_reader = des.PandasDeserializer()  # sends "Accept: text/csv, application/json"
    frame = Predictor("my-xgb", session, ser.CSVSerializer(), pandas_reader).predict(features)
    # pandas.read_csv takes the first (headerless) row for the header.
    header = np.array([[float(name) for name in frame.columns]])
    np.testing.assert_array_equal(np.vstack([header, frame.to_numpy()]), expected)


# --- KMeansPredictor end to end -----------------------------------------------------------------


def test_kmeans_predictor_local_client_chunked(
    kmeans: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk.patch_docker_host(monkeypatch)
    sent: list[tuple[str, tuple[Any, ...]]] = []
    original = urllib3.connection.HTTPConnection.putheader

    def spy(connection: Any, header: str, *values: Any) -> None:
        sent.append((header.lower(), values))
        original(connection, header, *values)

    monkeypatch.setattr(urllib3.connection.HTTPConnection, "putheader", spy)
    features = sdk.near_centroids(kmeans.reference, n=7).astype(np.float32)
    records = sdk.local_predictor(KMeansPredictor, kmeans.port).predict(features)
    assert ("transfer-encoding", ("chunked",)) in sent  # the RecordSerializer's BytesIO
    assert "content-length" not in {header for header, _ in sent}
    sdk.assert_kmeans(records, kmeans.reference, features)


def test_kmeans_predictor_stock_env(
    kmeans: Served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # POST /endpoints/my-kmeans/invocations through botocore, configured only by env vars.
    sdk.use_stock_aws_env(monkeypatch, tmp_path, kmeans.port)
    session = sdk.stock_session()
    urls: list[str] = []
    session.sagemaker_runtime_client.meta.events.register(
        "before-send",
        lambda request, **_: urls.append(request.url),  # observes, changes nothing
    )
    predictor = KMeansPredictor("my-kmeans", sagemaker_session=session)
    features = sdk.near_centroids(kmeans.reference, n=11, seed=4)
    records = predictor.predict(features)  # float64, as a user's array usually is
    assert urls == [sdk.url(kmeans.port, "/endpoints/my-kmeans/invocations")]
    sdk.assert_kmeans(records, kmeans.reference, features)


# --- stock boto3 --------------------------------------------------------------------------------


def test_boto3_invoke_endpoint(
    binary: Served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sdk.use_stock_aws_env(monkeypatch, tmp_path, binary.port)
    features = sdk.xgb_features(seed=13)
    answer = sdk.stock_runtime_client().invoke_endpoint(
        EndpointName="my-xgb",
        Body=sdk.serialized(ser.CSVSerializer(), features),
        ContentType="text/csv",
        Accept="application/json",
    )
    assert answer["ContentType"] == "application/json"
    got = [p["score"] for p in json.loads(answer["Body"].read())["predictions"]]
    np.testing.assert_array_equal(np.array(got)[:, None], sdk.scores(binary.reference, features))


PNG_BODY = b"\x89PNG\r\n\x1a\n"  # what SageMaker's image algorithms take, never these
ERRORS = [
    pytest.param(("application/x-image", PNG_BODY, "415"), id="415"),
    pytest.param(("text/csv", b"0.5,1.0,x,2.0\n", "400"), id="400"),
]


@pytest.fixture(params=ERRORS)
def refused(
    request: pytest.FixtureRequest, binary: Served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[ClientError, str, str]:
    """A request boto3 sends and smserve refuses: (the ClientError, status code, our message)."""
    content_type, body, code = request.param
    sdk.use_stock_aws_env(monkeypatch, tmp_path, binary.port)
    with pytest.raises(ClientError) as raised:
        sdk.stock_runtime_client().invoke_endpoint(
            EndpointName="my-xgb", ContentType=content_type, Body=body
        )
    raw = sdk.post(binary.port, body, content_type, "application/json")  # the same, over HTTP
    assert raw.status_code == int(code)
    return raised.value, code, raw.json()["error"]


def test_boto3_errors_are_client_errors(refused: tuple[ClientError, str, str]) -> None:
    error, code, message = refused
    assert error.response["Error"]["Code"] == code
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == int(code)
    assert error.response["ResponseMetadata"]["RetryAttempts"] == 0
    assert ("application/x-image" if code == "415" else "row 1, column 3") in message


def test_boto3_error_message_is_ours(refused: tuple[ClientError, str, str]) -> None:
    error, _, message = refused
    assert error.response["Error"]["Message"] == message
