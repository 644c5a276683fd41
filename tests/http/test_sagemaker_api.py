"""The SageMaker routes through Flask's test client, with a fake algorithm and fake codecs."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from smserve.config import Settings
from smserve.errors import PredictionError
from smserve.failures import INTERNAL_ERROR_MESSAGE
from smserve.http import context
from smserve.http.app import create_app
from smserve.types import Batch, Prediction
from tests.fakes import EchoAlgorithm, FailingAlgorithm, fake_service

ROWS = b"1,2\n3,4\n"
JSON_SCORES = {"predictions": [{"score": 3.0}, {"score": 7.0}]}


def error_of(response: TestResponse) -> str:
    """The message of a JSON error envelope, after checking the envelope itself."""
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Content-Length"] == str(len(response.data))
    body = response.get_json()
    assert set(body) == {"error", "message"}
    assert body["message"] == body["error"]  # for botocore, which reads only "message"
    assert "Traceback" not in body["error"]
    message: str = body["error"]
    return message


def test_ping_is_200_with_an_empty_body(client: FlaskClient) -> None:
    response = client.get("/ping")
    assert (response.status_code, response.data) == (200, b"")
    assert response.headers["Content-Length"] == "0"
    assert "Content-Type" not in response.headers


def test_ping_is_503_before_the_service_exists(app: Flask, settings: Settings) -> None:
    context.install(app, settings, None)
    response = app.test_client().get("/ping")
    assert response.status_code == 503
    assert "not loaded" in error_of(response)


@pytest.mark.parametrize(
    ("content_type", "accept", "expected_type"),
    [
        ("text/csv", None, "application/json"),
        ("text/csv", "*/*", "application/json"),
        ("text/csv", "text/csv", "text/csv"),
        ("TEXT/CSV; charset=utf-8", "application/json", "application/json"),
        ("application/json", "text/csv", "text/csv"),
        (None, "text/csv", "text/csv"),
        ("text/csv", "text/csv;q=0.5, application/json", "application/json"),
        ("text/csv", "application/json;verbose=True", "application/json"),
        ("text/csv", "text/*", "text/csv"),
    ],
    ids=lambda v: repr(v),
)
def test_invocations_content_types_and_accepts(
    client: FlaskClient, content_type: str | None, accept: str | None, expected_type: str
) -> None:
    body = (
        json.dumps({"instances": [[1, 2], [3, 4]]}).encode()
        if content_type == "application/json"
        else ROWS
    )
    headers = {k: v for k, v in (("Content-Type", content_type), ("Accept", accept)) if v}
    response = client.post("/invocations", data=body, headers=headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == expected_type  # exact: no charset added
    assert response.headers["Content-Length"] == str(len(response.data))
    expected: Any = JSON_SCORES if expected_type == "application/json" else b"3\n7\n"
    assert (
        response.get_json() if expected_type == "application/json" else response.data
    ) == expected


def test_endpoint_path_is_the_same_handler(client: FlaskClient) -> None:
    response = client.post("/endpoints/my-endpoint/invocations", data=ROWS, content_type="text/csv")
    assert response.status_code == 200
    assert response.get_json() == JSON_SCORES


def test_chunked_body_without_content_length(client: FlaskClient) -> None:
    # What the SDK sends for streamed bodies; the server terminates the stream (gunicorn does).
    response = post_chunked(client, ROWS)
    assert response.status_code == 200
    assert response.get_json() == JSON_SCORES


def post_chunked(client: FlaskClient, body: bytes) -> TestResponse:
    """POST ``body`` as a server that terminates chunked input presents it: no Content-Length."""
    environ = {"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True}
    headers = {"Content-Type": "text/csv", "Transfer-Encoding": "chunked"}
    response = client.post("/invocations", headers=headers, environ_overrides=environ)
    assert "CONTENT_LENGTH" not in response.request.environ
    return response


@pytest.mark.parametrize("content_type", ["text/csv", None])
def test_empty_body_is_204(
    client: FlaskClient, algorithm: EchoAlgorithm, content_type: str | None
) -> None:
    response = client.post("/invocations", data=b"", content_type=content_type)
    assert (response.status_code, response.data) == (204, b"")
    assert algorithm.calls == 0


def test_custom_attributes_and_unknown_headers_are_ignored(client: FlaskClient) -> None:
    headers = {"X-Amzn-SageMaker-Custom-Attributes": "trace=1", "X-Something-Else": "x"}
    response = client.post("/invocations", data=ROWS, content_type="text/csv", headers=headers)
    assert response.status_code == 200
    assert "X-Amzn-SageMaker-Custom-Attributes" not in response.headers


@pytest.mark.parametrize(
    ("headers", "body", "status", "fragment"),
    [
        ({"Content-Type": "image/png"}, ROWS, 415, "supported: text/csv, application/json"),
        ({"Content-Type": "text/csv", "Accept": "image/png"}, ROWS, 406, "image/png"),
        ({"Content-Type": "text/csv"}, b"1,x", 400, "text/csv"),
    ],
    ids=["415", "406", "400"],
)
def test_client_errors_are_json(
    client: FlaskClient, headers: dict[str, str], body: bytes, status: int, fragment: str
) -> None:
    response = client.post("/invocations", data=body, headers=headers)
    assert response.status_code == status
    assert fragment in error_of(response)


def test_unknown_route_is_404_json(client: FlaskClient) -> None:
    response = client.get("/predict")
    assert response.status_code == 404
    assert error_of(response) == "no such route: GET /predict"


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("get", "/invocations", "OPTIONS, POST"), ("post", "/ping", "GET, HEAD, OPTIONS")],
)
def test_wrong_method_is_405_json_with_allow(
    client: FlaskClient, method: str, path: str, allowed: str
) -> None:
    response = getattr(client, method)(path)
    assert response.status_code == 405
    assert error_of(response).endswith(f"allowed: {allowed}")
    assert set(response.headers["Allow"].split(", ")) == set(allowed.split(", "))


@pytest.fixture
def small_client(algorithm: EchoAlgorithm) -> FlaskClient:
    settings = Settings(max_payload_bytes=16)
    return create_app(settings, fake_service(algorithm, settings)).test_client()


def test_body_over_the_limit_is_413_json(small_client: FlaskClient) -> None:
    response = small_client.post("/invocations", data=b"1," * 20, content_type="text/csv")
    assert response.status_code == 413
    assert "16-byte limit" in error_of(response)


@pytest.mark.parametrize("size", [17, 18, 1000])
def test_chunked_body_over_the_limit_is_413_json(
    small_client: FlaskClient, algorithm: EchoAlgorithm, size: int
) -> None:
    # Werkzeug alone would silently cut such a body at the limit.
    response = post_chunked(small_client, b"1\n" * (size // 2) + b"1" * (size % 2))
    assert response.status_code == 413
    assert "16-byte limit" in error_of(response)
    assert "SAGEMAKER_MAX_PAYLOAD_IN_MB" in error_of(response)
    assert algorithm.calls == 0


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_body_of_exactly_the_limit_is_served(
    small_client: FlaskClient, algorithm: EchoAlgorithm, chunked: bool
) -> None:
    body = b"1\n" * 8
    if chunked:
        response = post_chunked(small_client, body)
    else:
        response = small_client.post("/invocations", data=body, content_type="text/csv")
    assert response.status_code == 200
    assert len(response.get_json()["predictions"]) == 8


def test_unexpected_errors_are_500_with_a_fixed_message(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    client = create_app(settings, fake_service(FailingAlgorithm(), settings)).test_client()
    with caplog.at_level(logging.ERROR, logger="smserve.failures"):
        response = client.post("/invocations", data=ROWS, content_type="text/csv")
    assert response.status_code == 500
    assert error_of(response) == INTERNAL_ERROR_MESSAGE
    assert FailingAlgorithm.SECRET not in response.get_data(as_text=True)
    assert FailingAlgorithm.SECRET in caplog.text
    assert "Traceback" in caplog.text


class _RefusingAlgorithm(EchoAlgorithm):
    def predict(self, batch: Batch) -> Prediction:
        raise PredictionError("the booster returned no scores")


def test_prediction_errors_keep_their_message(settings: Settings) -> None:
    client = create_app(settings, fake_service(_RefusingAlgorithm(), settings)).test_client()
    response = client.post("/invocations", data=ROWS, content_type="text/csv")
    assert response.status_code == 500
    assert error_of(response) == "the booster returned no scores"


class _BrokenStream(io.RawIOBase):
    """A request body whose client went away half-way."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise ConnectionResetError("peer went away")


def test_unreadable_body_is_400_json(client: FlaskClient, algorithm: EchoAlgorithm) -> None:
    environ = {"wsgi.input": _BrokenStream(), "wsgi.input_terminated": True}
    headers = {"Content-Type": "text/csv", "Content-Length": "100"}
    response = client.post("/invocations", headers=headers, environ_overrides=environ)
    assert response.status_code == 400
    assert "could not be read" in error_of(response)
    assert algorithm.calls == 0


def test_execution_parameters_defaults(client: FlaskClient) -> None:
    response = client.get("/execution-parameters")
    assert response.headers["Content-Type"] == "application/json"
    assert response.get_json() == {
        "MaxConcurrentTransforms": 3,
        "BatchStrategy": "MULTI_RECORD",
        "MaxPayloadInMB": 6,
    }


def test_execution_parameters_from_batch_environment(algorithm: EchoAlgorithm) -> None:
    settings = Settings.from_env(
        {
            "SAGEMAKER_BATCH": "true",
            "SAGEMAKER_MAX_CONCURRENT_TRANSFORMS": "8",
            "SAGEMAKER_BATCH_STRATEGY": "SINGLE_RECORD",
            "SAGEMAKER_MAX_PAYLOAD_IN_MB": "20",
        }
    )
    client = create_app(settings, fake_service(algorithm, settings)).test_client()
    assert client.get("/execution-parameters").get_json() == {
        "MaxConcurrentTransforms": 8,
        "BatchStrategy": "SINGLE_RECORD",
        "MaxPayloadInMB": 20,
    }
