"""SDK v3 invoking the image: ``sagemaker.core.resources.Endpoint.invoke`` with v3's
serializers (the container served by ``docker run``; boto3 aimed at it by
``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME``), and ``sagemaker.core.local.LocalSession``'s
create_model / create_endpoint_config / create_endpoint flow from a ``file://`` model.tar.gz
(Docker Compose runs ``serve``). Both algorithms; answers equal to in-process predictions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest

from tests.local_mode_v3 import v3_local as v3

with pytest.MonkeyPatch.context():
    from sagemaker.core import deserializers as des
    from sagemaker.core import serializers as ser
    from sagemaker.core.resources import Endpoint

ALGORITHMS = ("xgboost", "kmeans")


@pytest.fixture(scope="module", params=ALGORITHMS)
def algorithm(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def model_dir(algorithm: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return v3.model_folder(algorithm, tmp_path_factory.mktemp(f"{algorithm}-model"))


@pytest.fixture(scope="module")
def port(image: str, model_dir: Path) -> Iterator[int]:
    with v3.served(image, model_dir) as port:
        yield port


def endpoint(port: int, monkeypatch: pytest.MonkeyPatch, **coders: Any) -> Endpoint:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", f"http://127.0.0.1:{port}")
    return Endpoint(endpoint_name="smserve", **coders)


@pytest.mark.parametrize(
    ("serializer", "deserializer"),
    [
        (ser.CSVSerializer(), des.CSVDeserializer()),
        (ser.NumpySerializer(), des.NumpyDeserializer()),
        (ser.CSVSerializer(), des.JSONDeserializer()),
        (ser.JSONSerializer(), des.NumpyDeserializer()),
    ],
    ids=["csv-csv", "npy-npy", "csv-json", "json-npy"],
)
def test_endpoint_invoke_with_v3_serializers(
    algorithm: str,
    model_dir: Path,
    port: int,
    serializer: Any,
    deserializer: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if algorithm == "xgboost" and serializer.CONTENT_TYPE == "application/json":
        pytest.skip("the built-in XGBoost reads no JSON requests (415), as upstream")
    rows = v3.features()
    client = endpoint(port, monkeypatch, serializer=serializer, deserializer=deserializer)
    accept = deserializer.ACCEPT[0]
    # A boto3 session of its own: v3 caches one runtime client per process (and session), so
    # a second endpoint URL in the same process would otherwise reach the first container.
    session = boto3.session.Session()
    reply = client.invoke(
        body=rows, content_type=serializer.CONTENT_TYPE, accept=accept, session=session
    )
    answer = reply.body
    if accept == "text/csv":
        answer = [[float(cell) for cell in row] for row in answer]
    elif accept == "application/json":
        answer = json_rows(algorithm, answer)
    v3.assert_answer(algorithm, model_dir, rows, answer)


def json_rows(algorithm: str, document: dict[str, Any]) -> list[list[float]]:
    keys = ("score",) if algorithm == "xgboost" else ("closest_cluster", "distance_to_cluster")
    return [[p[key] for key in keys] for p in document["predictions"]]


def test_v3_record_serializer_is_not_implemented() -> None:
    # Why a v3 user of k-means sends CSV, JSON or NumPy: v3's RecordIO classes raise.
    with pytest.raises(NotImplementedError):
        ser.RecordSerializer().serialize(np.zeros((1, 4), np.float32))


# --- LocalSession: model, endpoint config, endpoint ---------------------------------------------


def test_local_session_model_endpoint_config_endpoint(
    image: str, algorithm: str, model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a folder of its own: the SDK unpacks every archive of that folder into it and mounts
    # the whole folder as /opt/ml/model.
    (tmp_path / "archive").mkdir()
    tarball = v3.archive(model_dir, tmp_path / "archive" / "model.tar.gz")
    rows = v3.features(seed=6)
    answer = v3.local_session_csv(image, tarball, tmp_path / "root", monkeypatch, rows)
    v3.assert_answer(algorithm, model_dir, rows, answer)


def test_local_session_batch_transform(
    image: str, algorithm: str, model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v3's local Batch Transform: create_model, then create_transform_job over a file://
    folder; the assembled output equals the in-process answers row for row."""
    (tmp_path / "archive").mkdir()
    tarball = v3.archive(model_dir, tmp_path / "archive" / "model.tar.gz")
    rows = v3.features(seed=8)
    answer = v3.local_transform_csv(image, tarball, tmp_path / "root", monkeypatch, rows)
    v3.assert_answer(algorithm, model_dir, rows, answer)
