"""application/x-npy through the SageMaker door (Flask's test client, a fake algorithm, the real
codecs): negotiated like every other format, errors in the JSON envelope."""

from __future__ import annotations

import io

import numpy as np
import pytest
from flask.testing import FlaskClient

from smserve.codecs import default_registry
from smserve.config import Settings
from smserve.http.app import create_app
from smserve.service import InferenceService
from tests.fakes import EchoAlgorithm

NPY = "application/x-npy"
ROWS = np.array([[1.0, 2.0], [3.0, 4.5]])


@pytest.fixture
def real_codecs() -> FlaskClient:
    settings = Settings(workers=1)
    service = InferenceService(EchoAlgorithm(), default_registry(settings), settings)
    return create_app(settings, service).test_client()


def saved(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


@pytest.mark.parametrize("accept", [NPY, f"text/csv;q=0.5, {NPY}", "application/*;q=0.1, " + NPY])
def test_npy_in_npy_out(real_codecs: FlaskClient, accept: str) -> None:
    response = real_codecs.post(
        "/invocations", data=saved(ROWS), headers={"Content-Type": NPY, "Accept": accept}
    )
    assert response.status_code == 200, response.data
    assert response.headers["Content-Type"] == NPY
    np.testing.assert_array_equal(np.load(io.BytesIO(response.data)), [3.0, 7.5])


def test_csv_in_npy_out_and_npy_in_json_out(real_codecs: FlaskClient) -> None:
    answer = real_codecs.post(
        "/invocations", data=b"1,2\n3,4.5\n", headers={"Content-Type": "text/csv", "Accept": NPY}
    )
    np.testing.assert_array_equal(np.load(io.BytesIO(answer.data)), [3.0, 7.5])
    answer = real_codecs.post(
        "/invocations",
        data=saved(ROWS),
        headers={"Content-Type": NPY, "Accept": "application/json"},
    )
    assert answer.get_json() == {"predictions": [{"score": 3.0}, {"score": 7.5}]}


def test_a_bad_npy_body_is_400_in_the_envelope(real_codecs: FlaskClient) -> None:
    response = real_codecs.post(
        "/invocations", data=saved(ROWS)[:-3], headers={"Content-Type": NPY}
    )
    assert response.status_code == 400
    assert "is truncated" in response.get_json()["message"]


def test_npy_refused_by_accept_is_406(real_codecs: FlaskClient) -> None:
    response = real_codecs.post(
        "/invocations",
        data=saved(ROWS),
        headers={"Content-Type": NPY, "Accept": f"{NPY};q=0"},
    )
    assert response.status_code == 406
