"""Infinities are a 400 naming where they are, in every format and for both algorithms; NaN
and empty fields stay missing values (XGBoost takes them, k-means refuses them itself).

Runs the real codecs through the real service, against a tiny XGBoost model and k-means
centroids, both with 4 features."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from smserve import media
from smserve.algorithms.kmeans.algorithm import KMeans
from smserve.algorithms.loading import load_algorithm
from smserve.codecs import default_registry
from smserve.codecs.finite import check_finite
from smserve.config import Settings
from smserve.errors import DecodeError, InvalidInput
from smserve.service import InferenceService
from smserve.types import Batch
from tests.unit.codecs.recordio_bodies import body_of, dense_body, record

ALGORITHMS = ["xgboost", "kmeans"]
INFINITE_TEXT = ["inf", "-inf", "Infinity", "-Infinity", "1e39", "-3.5e38"]
LOCATED = "the value is infinite or beyond float32's range"


@pytest.fixture(params=ALGORITHMS)
def service(
    request: pytest.FixtureRequest, xgb_binary_dir: Path, kmeans_centroids: np.ndarray
) -> InferenceService:
    settings = Settings(model_dir=xgb_binary_dir, xgboost_device="cpu")
    if request.param == "xgboost":
        algorithm = load_algorithm(settings)
    else:
        algorithm = KMeans(kmeans_centroids)
    return InferenceService(algorithm, default_registry(settings), settings)


def refused(service: InferenceService, body: bytes, content_type: str) -> str:
    with pytest.raises(DecodeError) as caught:
        service.invoke(body, content_type, media.JSON)
    assert caught.value.status == 400
    return str(caught.value)


@pytest.mark.parametrize("token", INFINITE_TEXT)
def test_csv_names_row_and_column(service: InferenceService, token: str) -> None:
    body = f"1,2,3,4\n\n1,2,{token},4\n".encode()  # the blank line counts: row 3
    message = refused(service, body, media.CSV)
    assert message.startswith(f"text/csv: row 3, column 3: {LOCATED}")


def test_csv_tolerant_path_names_row_and_column(service: InferenceService) -> None:
    message = refused(service, b"1,,3,4\r\n1,2,3,inf\r\n", media.CSV)
    assert message.startswith("text/csv: row 2, column 4: ")


@pytest.mark.parametrize("number", ["1e39", "-1e39", "3.5e38"])
@pytest.mark.parametrize(
    ("content_type", "template", "where"),
    [
        (media.JSON, '{{"instances": [[1, 2, 3, 4], [1, 2, {}, 4]]}}', "instances[1], column 3"),
        (media.JSON, '[[1, 2, 3, 4], {{"features": [1, 2, {}, 4]}}]', "instances[1], column 3"),
        (
            media.JSON,
            '{{"instances": [{{"data": {{"features": '
            '{{"keys": [0, 2], "shape": [4], "values": [1, {}]}}}}}}]}}',
            "instances[0], column 3",
        ),
        (media.JSONLINES, "[1, 2, 3, 4]\n\n[1, 2, {}, 4]\n", "line 3, column 3"),
    ],
    ids=["json-rows", "json-features", "json-sparse", "jsonlines"],
)
def test_json_forms_name_instance_and_column(
    service: InferenceService, content_type: str, template: str, where: str, number: str
) -> None:
    message = refused(service, template.format(number).encode(), content_type)
    assert message.startswith(f"{content_type}: {where}: {LOCATED}")


@pytest.mark.parametrize("token", INFINITE_TEXT)
def test_libsvm_names_line_and_index(service: InferenceService, token: str) -> None:
    body = f"0 0:1 1:2\n\n1 0:1 2:{token}\n".encode()
    message = refused(service, body, media.LIBSVM)
    assert message.startswith(f"text/libsvm: line 3, index 2: {LOCATED}")


@pytest.mark.parametrize(
    ("body", "where"),
    [
        pytest.param(
            dense_body([[1, 2, 3, 4], [1, 2, math.inf, 4]]), "record 2, column 3", id="f32"
        ),
        pytest.param(
            dense_body([[1, 2, 3, 4], [1, 2, 3, -1e39]], kind="float64_tensor"),
            "record 2, column 4",
            id="f64-overflow",
        ),
        pytest.param(
            body_of([record([1, 2, 3, 4]), record([1, -math.inf, 3, 4], kind="float64_tensor")]),
            "record 2, column 2",
            id="general-reader",
        ),
        pytest.param(
            body_of([record([1.0], keys=[0], shape=[4]), record([math.inf], keys=[3], shape=[4])]),
            "record 2, column 4",
            id="sparse",
        ),
    ],
)
def test_recordio_names_record_and_column(
    service: InferenceService, body: bytes, where: str
) -> None:
    message = refused(service, body, media.RECORDIO)
    assert message.startswith(f"application/x-recordio-protobuf: {where}: {LOCATED}")


def test_large_finite_values_pass(service: InferenceService) -> None:
    reply = service.invoke(b"1e38,-1e38,0,1\n", media.CSV, media.JSON)
    assert reply is not None


def test_largest_float32_is_finite() -> None:
    largest = np.finfo(np.float32).max
    check_finite(Batch(np.array([[largest, -largest]], dtype=np.float32)), media.CSV)
    with pytest.raises(DecodeError, match="^text/csv: row 1, column 2: "):
        check_finite(Batch(np.array([[largest, np.inf]], dtype=np.float32)), media.CSV)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"1,,3,4\n1,nan,3,4\n", media.CSV),
        (b'{"instances": [[1, null, 3, 4]]}', media.JSON),
        (b"[1, null, 3, 4]", media.JSONLINES),
        (b"0 0:1 1:nan", media.LIBSVM),
        (dense_body([[1, math.nan, 3, 4]]), media.RECORDIO),
    ],
    ids=["csv", "json", "jsonlines", "libsvm", "recordio"],
)
def test_nan_and_empty_are_missing(
    service: InferenceService, body: bytes, content_type: str
) -> None:
    """XGBoost predicts (a missing value); k-means answers 400 naming the value."""
    if service.algorithm.name == "xgboost":
        assert service.invoke(body, content_type, media.JSON) is not None
        return
    where = r"(row 1|line 1|record 1|instances\[0\]), (column 2|index 1): the value is missing"
    with pytest.raises(InvalidInput, match=where):
        service.invoke(body, content_type, media.JSON)
