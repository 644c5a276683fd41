"""Bad input never costs a 500: random and mutated bodies and headers, sent to the real
algorithms through the real app, answer with a prediction or a JSON 4xx."""

from __future__ import annotations

import numpy as np
import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smserve.algorithms.ndarray import write_ndarray_file
from smserve.codecs.recordio.codec import RecordioCodec
from smserve.config import Settings
from smserve.http.app import create_app
from smserve.media import CSV, JSON, JSONLINES, LIBSVM, RECORDIO, MediaType
from tests.unit.codecs.recordio_bodies import dense_body

CONTENT_TYPES = [CSV, JSON, JSONLINES, LIBSVM, RECORDIO]
ROW = [0.5, -1.25, 3.0, 7.5]


VALID_BODIES = {
    CSV: b"0.5,-1.25,3.0,7.5\n1,2,3,4\n",
    JSON: b'{"instances": [{"features": [0.5, -1.25, 3.0, 7.5]}, '
    b'{"data": {"features": {"keys": [0, 3], "shape": [4], "values": [1, 2]}}}]}',
    JSONLINES: b'{"features": [0.5, -1.25, 3.0, 7.5]}\n[1, 2, 3, 4]\n',
    LIBSVM: b"1 0:0.5 1:-1.25 3:7.5\n0 2:3.0\n",
    RECORDIO: dense_body([ROW]),
}


@pytest.fixture(scope="module")
def clients(
    tmp_path_factory: pytest.TempPathFactory, _xgb_models: dict[str, bytes]
) -> dict[str, FlaskClient]:
    root = tmp_path_factory.mktemp("robustness")
    kmeans, xgboost, selectable = root / "kmeans", root / "xgboost", root / "selectable"
    for directory in (kmeans, xgboost, selectable):
        directory.mkdir()
    write_ndarray_file(kmeans / "model_algo-1", np.eye(3, 4, dtype=np.float32))
    (xgboost / "xgboost-model").write_bytes(_xgb_models["binary"])
    (selectable / "xgboost-model").write_bytes(_xgb_models["multiclass"])
    output = "predicted_label,probabilities,raw_scores,labels,predicted_score"
    apps = {
        "kmeans": create_app(Settings(model_dir=kmeans)),
        "xgboost": create_app(Settings(model_dir=xgboost)),
        "selectable": create_app(
            Settings(model_dir=selectable, inference_output=tuple(output.split(",")))
        ),
    }
    return {name: app.test_client() for name, app in apps.items()}


def test_every_valid_body_predicts(clients: dict[str, FlaskClient]) -> None:
    # The property tests below would pass vacuously if nothing ever succeeded.
    for client in clients.values():
        for content_type, body in VALID_BODIES.items():
            response = client.post("/invocations", data=body, content_type=content_type)
            assert response.status_code == 200, (content_type, response.data)


def _assert_not_a_server_fault(client: FlaskClient, body: bytes, headers: dict[str, str]) -> None:
    response = client.post("/invocations", data=body, headers=headers)
    assert response.status_code in (200, 204) or 400 <= response.status_code < 500, (
        response.status_code,
        response.data,
    )
    if response.status_code >= 400:
        assert response.headers["Content-Type"] == "application/json"
        assert "error" in response.get_json()


def _mutated(body: bytes, position: int, change: int, how: str) -> bytes:
    index = position % max(len(body), 1)
    if how == "flip":
        return body[:index] + bytes([(body[index] + change) % 256]) + body[index + 1 :]
    if how == "truncate":
        return body[:index]
    if how == "insert":
        return body[:index] + bytes([change % 256]) * (change % 7 + 1) + body[index:]
    return body + body[index:]  # "repeat": a tail appended again


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(["kmeans", "xgboost", "selectable"]),
    content_type=st.sampled_from(CONTENT_TYPES),
    position=st.integers(0, 10_000),
    change=st.integers(1, 255),
    how=st.sampled_from(["flip", "truncate", "insert", "repeat"]),
    accept=st.sampled_from([JSON, JSONLINES, CSV, RECORDIO, "*/*"]),
)
def test_mutated_bodies_never_cost_a_500(
    clients: dict[str, FlaskClient],
    model: str,
    content_type: str,
    position: int,
    change: int,
    how: str,
    accept: str,
) -> None:
    body = _mutated(VALID_BODIES[content_type], position, change, how)
    headers = {"Content-Type": content_type, "Accept": accept}
    _assert_not_a_server_fault(clients[model], body, headers)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(["kmeans", "xgboost", "selectable"]),
    body=st.binary(max_size=300),
    content_type=st.one_of(
        st.sampled_from(CONTENT_TYPES), st.text(st.sampled_from("abc/;=, *x-q.0"), max_size=30)
    ),
    accept=st.text(st.sampled_from("abcjsonvt/;=, *q.01"), max_size=40),
)
def test_random_bodies_and_headers_never_cost_a_500(
    clients: dict[str, FlaskClient], model: str, body: bytes, content_type: str, accept: str
) -> None:
    _assert_not_a_server_fault(
        clients[model], body, {"Content-Type": content_type, "Accept": accept}
    )


def test_recordio_request_body_is_what_it_claims() -> None:
    decoded = RecordioCodec().decode(VALID_BODIES[RECORDIO], MediaType(RECORDIO))
    assert np.array_equal(decoded.features, np.array([ROW], dtype=np.float32))
