"""The TF Serving API through Flask: routing under /v1/, envelopes, headers, gzip, metrics,
and the same numbers from /invocations and :predict with the real algorithms."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http import context
from smserve.http.app import create_app
from smserve.service import InferenceService
from tests.fakes import fake_service
from tests.tfserving.fakes import FakeKMeans, FakeXGBoost

PREDICT = "/v1/models/model:predict"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(runtime_dir=tmp_path / "run", max_payload_bytes=4096)


@pytest.fixture
def app(settings: Settings) -> Flask:
    service = fake_service(FakeKMeans(n=2), settings)  # type: ignore[arg-type]
    return create_app(settings, service)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def test_predict_answers_json_with_the_version_header(client: FlaskClient) -> None:
    response = client.post(PREDICT, data=b'{"instances": [[0, 0], [10, 10]]}')
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["X-Model-Version"] == "1"
    assert response.get_json()["predictions"][1] == {
        "closest_cluster": 1.0,
        "distance_to_cluster": 0.0,
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/models/model:predict"),
        ("PUT", "/v1/models/model"),
        ("DELETE", "/v1/models/model"),
        ("POST", "/v1/models/model:PREDICT"),
        ("POST", "/v1/nothing/here"),
        ("GET", "/v1/"),
        ("HEAD", "/v1/models/model"),
    ],
)
def test_unrouted_requests_under_v1_are_malformed_400(
    client: FlaskClient, method: str, path: str
) -> None:
    response = client.open(path, method=method)
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/json"
    if method != "HEAD":
        assert response.get_json() == {"error": f"Malformed request: {method} {path}"}


def test_paths_match_case_insensitively(client: FlaskClient) -> None:
    response = client.post("/V1/Models/model:predict", data=b'{"instances": [[0, 0]]}')
    assert response.status_code == 200
    status = client.get("/V1/MODELS/model/METADATA")  # the sub-resource is case-sensitive
    assert "model_version_status" in status.get_json()


def test_status_and_metadata(client: FlaskClient) -> None:
    status = client.get("/v1/models/model")
    assert status.get_json() == {
        "model_version_status": [
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }
    metadata = client.get("/v1/models/model/versions/1/metadata")
    assert metadata.get_json()["model_spec"] == {
        "name": "model",
        "signature_name": "",
        "version": "1",
    }
    missing = client.get("/v1/models/model/versions/2")
    assert (missing.status_code, missing.get_json()) == (
        404,
        {"error": "Could not find version 2 of model model"},
    )


def test_gzip_bodies_are_inflated(client: FlaskClient) -> None:
    body = gzip.compress(b'{"instances": [[10, 10]]}')
    response = client.post(PREDICT, data=body, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200
    assert response.get_json()["predictions"][0]["closest_cluster"] == 1.0


def test_gzip_errors_are_client_errors(client: FlaskClient) -> None:
    bad = client.post(PREDICT, data=b"not gzip", headers={"Content-Encoding": "gzip"})
    assert bad.status_code == 400
    big = gzip.compress(b'{"instances": [' + b"[0, 0], " * 2000 + b"[0, 0]]}")
    too_big = client.post(PREDICT, data=big, headers={"Content-Encoding": "gzip"})
    assert too_big.status_code == 413
    assert "inflates past" in too_big.get_json()["error"]


def test_a_body_over_the_limit_is_413_json(client: FlaskClient) -> None:
    response = client.post(PREDICT, data=b" " * 5000)
    assert response.status_code == 413
    assert "error" in response.get_json()


def test_cors_preflight(client: FlaskClient) -> None:
    ok = client.open(PREDICT, method="OPTIONS", headers={"Origin": "https://example.com"})
    assert ok.status_code == 200
    refused = client.open(PREDICT, method="OPTIONS")
    assert refused.get_json() == {"error": "Origin header is missing in CORS preflight"}


def test_paths_outside_v1_keep_the_sagemaker_behaviour(client: FlaskClient) -> None:
    assert client.get("/ping").status_code == 200
    assert client.get("/v2/models").status_code == 404


def test_invocations_names_its_version(settings: Settings) -> None:
    client = create_app(settings, fake_service(FakeXGBoost(n=2), settings)).test_client()  # type: ignore[arg-type]
    response = client.post("/invocations", data=b"0,0\n", content_type="text/csv")
    assert response.status_code == 200
    assert response.headers["X-Model-Version"] == "1"


def _metric(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{wanted}}} "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name}{{{wanted}}} not in\n{text}")


def test_metrics_count_requests_by_status_and_time_the_successes(settings: Settings) -> None:
    client = create_app(settings, fake_service(FakeXGBoost(n=2), settings)).test_client()  # type: ignore[arg-type]
    client.post(PREDICT, data=b'{"instances": [[0, 0]]}')
    client.post(PREDICT, data=b'{"instances": [[0, 0]]}')
    client.post(PREDICT, data=b"{")
    client.post("/invocations", data=b"0,0\n", content_type="text/csv")
    page = client.get("/monitoring/prometheus/metrics")
    assert page.headers["Content-Type"].startswith("text/plain")
    text = page.get_data(as_text=True)
    count = ":tensorflow:serving:request_count"
    assert _metric(text, count, model_name="model", status="OK") == 3
    assert _metric(text, count, model_name="model", status="INVALID_ARGUMENT") == 1
    latency = ":tensorflow:serving:request_latency"
    labels = {"model_name": "model", "API": "predict", "entrypoint": "REST"}
    assert _metric(text, f"{latency}_count", **labels) == 2
    assert _metric(text, f"{latency}_bucket", **labels, le="+Inf") == 2
    assert _metric(text, f"{latency}_bucket", **labels, le="10") <= 2
    assert (
        f'{latency}_bucket{{model_name="model",API="predict",entrypoint="REST",le="32.4"}}' in text
    )
    invocations = {"model_name": "model", "API": "invocations", "entrypoint": "REST"}
    assert _metric(text, f"{latency}_count", **invocations) == 1


def test_metrics_sum_every_workers_file(settings: Settings, tmp_path: Path) -> None:
    """Two apps sharing one run directory stand for two gunicorn workers."""
    from smserve.repository import runtime

    shared = runtime.prepare(settings)
    first = create_app(shared, fake_service(FakeKMeans(n=2), shared)).test_client()  # type: ignore[arg-type]
    second = create_app(shared, fake_service(FakeKMeans(n=2), shared)).test_client()  # type: ignore[arg-type]
    first.post(PREDICT, data=b'{"instances": [[0, 0]]}')
    second.post(PREDICT, data=b'{"instances": [[0, 0]]}')
    first.get("/monitoring/prometheus/metrics")  # flushes the first worker's file
    text = second.get("/monitoring/prometheus/metrics").get_data(as_text=True)
    assert _metric(text, ":tensorflow:serving:request_count", model_name="model", status="OK") == 2


ROWS = [[0.5, -1.0, 2.0, 0.25], [10.0, 9.5, 11.0, 10.0], [1.5, 16.0, 14.0, 23.0]]


@pytest.mark.parametrize("model", ["kmeans_model_dir", "xgb_binary_dir", "xgb_multiclass_dir"])
def test_invocations_and_predict_give_the_same_numbers(
    model: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    model_dir: Path = request.getfixturevalue(model)
    client = create_app(Settings(model_dir=model_dir, runtime_dir=tmp_path)).test_client()
    csv = "\n".join(",".join(str(v) for v in row) for row in ROWS).encode()
    sagemaker = client.post(
        "/invocations", data=csv, content_type="text/csv", headers={"Accept": "application/json"}
    )
    tfs = client.post(PREDICT, data=json.dumps({"instances": ROWS}).encode())
    assert (sagemaker.status_code, tfs.status_code) == (200, 200)
    expected = sagemaker.get_json()["predictions"]
    predictions = tfs.get_json()["predictions"]
    for ours, theirs in zip(predictions, expected, strict=True):
        ours = ours if isinstance(ours, dict) else {"score": ours}
        assert set(ours) == set(theirs)
        for key, value in theirs.items():
            np.testing.assert_array_equal(np.float32(ours[key]), np.float32(value))


def test_injected_service_is_the_one_v1_uses(settings: Settings) -> None:
    algorithm = FakeKMeans(n=2)
    service: InferenceService = fake_service(algorithm, settings)  # type: ignore[arg-type]
    app = create_app(settings, service)
    app.test_client().post(PREDICT, data=b'{"instances": [[0, 0]]}')
    doors = {door.spec.name: door.mount.door for door in context.serving_of(app).doors}
    assert doors["tfserving"].models.resolve("model").service is service  # type: ignore[attr-defined]
