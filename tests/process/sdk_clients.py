"""The real SageMaker Python SDK (2.x), boto3 and requests, aimed at a local ``smserve serve``.

Three ways in, all with stock client code:

* ``round_trip``: an SDK serializer's bytes over ``requests``, the response handed to an SDK
  deserializer with the response's own Content-Type;
* ``local_predictor``: a real ``Predictor`` subclass whose session is the SDK's local-mode
  ``LocalSagemakerRuntimeClient`` (urllib3; BytesIO bodies go out chunked), port from its
  ``local.serving_port`` config, host from the patched ``get_docker_host``;
* ``use_stock_aws_env``: the stock boto3 / ``sagemaker.Session`` path, configured only by
  environment variables, which POSTs ``/endpoints/<name>/invocations``.

Also here: the in-process references answers are compared with (brute-force nearest
centroid, XGBoost on the same float32 or CSR features) and the inputs the tests send.

The SDK prints a v2 deprecation notice on import and on some constructors: the environment
switch silences the runtime ones, the import is wrapped for the one issued while importing.
"""

from __future__ import annotations

import io
import os
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
import scipy.sparse as sp

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # the SDK's "v2 is deprecated" notice
    import boto3
    import sagemaker
    from botocore.config import Config
    from sagemaker import deserializers, serializers
    from sagemaker.amazon.common import write_spmatrix_to_sparse_tensor
    from sagemaker.amazon.kmeans import KMeansPredictor
    from sagemaker.local import local_session
    from sagemaker.predictor import Predictor
    from sagemaker.xgboost.model import XGBoostPredictor

__all__ = [
    "KMeansPredictor",
    "Predictor",
    "XGBoostPredictor",
    "deserializers",
    "serializers",
]

HOST = "127.0.0.1"
RECORDIO = "application/x-recordio-protobuf"
TIMEOUT_S = 30.0
# Everything that could point boto3 somewhere else than the environment set by a test.
_AWS_VARIABLES = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_RETRY_MODE",
)


def url(port: int, path: str = "/invocations") -> str:
    return f"http://{HOST}:{port}{path}"


def post(port: int, body: bytes | str, content_type: str, accept: str) -> requests.Response:
    headers = {"Content-Type": content_type, "Accept": accept}
    return requests.post(url(port), data=body, headers=headers, timeout=TIMEOUT_S)


def serialized(serializer: Any, data: Any) -> bytes:
    """The bytes an SDK serializer puts on the wire (it returns str, bytes or a BytesIO)."""
    body = serializer.serialize(data)
    if hasattr(body, "read"):
        body = body.read()
    return body.encode() if isinstance(body, str) else bytes(body)


def round_trip(
    port: int, serializer: Any, deserializer: Any, data: Any
) -> tuple[Any, requests.Response]:
    """Serialize, POST with the headers a Predictor would send, deserialize; 200 expected."""
    accept = ", ".join(deserializer.ACCEPT)
    response = post(port, serialized(serializer, data), serializer.CONTENT_TYPE, accept)
    assert response.status_code == 200, response.text
    content_type = response.headers["Content-Type"]
    return deserializer.deserialize(io.BytesIO(response.content), content_type), response


def local_predictor(predictor_class: type, port: int, **kwargs: Any) -> Any:
    """A real Predictor (subclass) on the SDK's local-mode runtime client, aimed at ``port``.
    The caller patches ``local_session.get_docker_host`` (see ``patch_docker_host``)."""
    client = local_session.LocalSagemakerRuntimeClient(config={"local": {"serving_port": port}})
    session = types.SimpleNamespace(sagemaker_runtime_client=client)
    return predictor_class("local-endpoint", sagemaker_session=session, **kwargs)


def patch_docker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local client asks docker where containers listen; there is no docker here."""
    monkeypatch.setattr(local_session, "get_docker_host", lambda: HOST)


def use_stock_aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, port: int) -> None:
    """Only environment variables: endpoint URL, region, dummy credentials, one attempt.
    No AWS config files are read and no earlier default boto3 session is reused."""
    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", f"http://{HOST}:{port}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # a 500 must not be retried silently
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)


def stock_session() -> sagemaker.Session:
    """A fresh ``sagemaker.Session()``, built after ``use_stock_aws_env``."""
    return sagemaker.Session()


def stock_runtime_client() -> Any:
    """``boto3`` ``sagemaker-runtime`` from the environment, with retries off."""
    config = Config(retries={"max_attempts": 1}, read_timeout=TIMEOUT_S)
    return boto3.session.Session().client("sagemaker-runtime", config=config)


def sparse_records(matrix: Any) -> bytes:
    """RecordIO-protobuf of a scipy sparse matrix, written by the SDK's sparse writer."""
    buffer = io.BytesIO()
    write_spmatrix_to_sparse_tensor(buffer, matrix)
    return buffer.getvalue()


def kmeans_outputs(records: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(closest_cluster, distance_to_cluster)`` from SDK Records, one per row."""
    clusters = [r.label["closest_cluster"].float32_tensor.values for r in records]
    distances = [r.label["distance_to_cluster"].float32_tensor.values for r in records]
    assert all(len(v) == 1 for v in clusters + distances)
    return np.array(clusters, dtype=np.float32)[:, 0], np.array(distances, dtype=np.float32)[:, 0]


# --- in-process references ---------------------------------------------------------------------


def near_centroids(centroids: np.ndarray, n: int = 9, seed: int = 3) -> np.ndarray:
    """float64 rows scattered around the centroids, so every cluster gets some."""
    rng = np.random.default_rng(seed)
    return centroids[np.arange(n) % len(centroids)] + rng.normal(0, 1.5, (n, centroids.shape[1]))


def nearest(centroids: np.ndarray, features: Any) -> tuple[np.ndarray, np.ndarray]:
    """Brute force in float64 over the float32 features the server decodes."""
    dense = np.asarray(features.toarray() if sp.issparse(features) else features)
    x = dense.astype(np.float32).astype(np.float64)
    distances = np.sqrt(((x[:, None, :] - centroids[None, :, :].astype(np.float64)) ** 2).sum(-1))
    return distances.argmin(axis=1).astype(np.float32), distances.min(axis=1)


def assert_kmeans(records: list[Any], centroids: np.ndarray, features: Any) -> None:
    clusters, distances = kmeans_outputs(records)
    expected_clusters, expected_distances = nearest(centroids, features)
    np.testing.assert_array_equal(clusters, expected_clusters)
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-5, atol=1e-5)


def xgb_features(n: int = 10, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)


def scores(booster: Any, features: Any) -> np.ndarray:
    """In-process XGBoost, float32 promoted to float64 (what the server writes), 2-D."""
    predicted = np.asarray(booster.inplace_predict(features), dtype=np.float64)
    return predicted.reshape(predicted.shape[0], -1)


def csv_numbers(rows: list[list[str]]) -> np.ndarray:
    return np.array([[float(cell) for cell in row] for row in rows], dtype=np.float64)


def read_with_sdk(accept: str, body: bytes, content_type: str) -> Any:
    """The response read by the SDK deserializer made for ``accept``."""
    deserializer = {
        "application/json": deserializers.JSONDeserializer(),
        "application/jsonlines": deserializers.JSONLinesDeserializer(),
        "text/csv": deserializers.CSVDeserializer(),
        RECORDIO: deserializers.RecordDeserializer(),
    }[accept]
    return deserializer.deserialize(io.BytesIO(body), content_type)
