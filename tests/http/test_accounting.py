"""Every door's answers counted under conventional names (exact and pattern routes alike),
stage times for invocations, bounded labels, and the debug line per request."""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from smserve.algorithms import catalog
from smserve.config import Settings
from smserve.http.accounting import AccessLog, format_label
from smserve.http.app import create_app
from smserve.media import PROMETHEUS_TEXT
from smserve.repository import runtime
from tests.fakes import EchoAlgorithm, SlowAlgorithm, fake_service

ROWS = b"1,2\n3,4\n"
V2_BODY = b'{"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}'


def samples(client: FlaskClient, path: str = "/metrics") -> dict[str, float]:
    response = client.get(path)
    assert response.status_code == 200
    assert response.content_type == PROMETHEUS_TEXT
    found = {}
    for line in response.get_data(as_text=True).splitlines():
        if not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    settings = runtime.prepare(Settings(runtime_dir=tmp_path))
    return create_app(settings, fake_service(SlowAlgorithm(0.02)))


def test_requests_by_door_model_format_and_status(app: Flask) -> None:
    client = app.test_client()
    for _ in range(3):
        assert client.post("/invocations", data=ROWS, content_type="text/csv").status_code == 200
    assert client.post("/invocations", data=ROWS, content_type="image/png").status_code == 415
    assert client.post("/invocations", data=ROWS, content_type="csv").status_code == 200
    headers = {"X-Amzn-SageMaker-Target-Model": "nope"}
    assert client.post("/invocations", data=ROWS, headers=headers).status_code == 404
    assert client.post("/v2/models/model/infer", data=V2_BODY).status_code == 200
    assert client.get("/v1/models/model").status_code == 200
    found = samples(client)
    request = 'smserve_requests_total{door="%s",model="%s",format="%s",status="%s"}'
    assert found[request % ("sagemaker", "model", "text/csv", 200)] == 4  # aliases as one
    assert found[request % ("sagemaker", "model", "other", 415)] == 1  # not a format we read
    assert found[request % ("sagemaker", "", "", 404)] == 1  # not the name it asked for
    assert found[request % ("v2", "model", "", 200)] == 1
    assert found[request % ("tfserving", "model", "", 200)] == 1
    assert found['smserve_request_payload_bytes_total{door="sagemaker",model="model"}'] == 5 * 8
    assert found['smserve_response_payload_bytes_total{door="sagemaker",model="model"}'] > 0
    assert found["smserve_requests_in_flight"] == 0


def test_latency_and_its_stages_in_seconds(app: Flask) -> None:
    client = app.test_client()
    for _ in range(4):
        client.post("/invocations", data=ROWS, content_type="text/csv")
    found = samples(client)
    duration = 'smserve_request_duration_seconds_%s{door="sagemaker",model="model"}'
    assert found[duration % "count"] == 4
    assert 0.08 <= found[duration % "sum"] < 4  # four predictions that sleep 20 ms each
    stage = 'smserve_inference_stage_duration_seconds_%s{model="model",stage="%s"}'
    assert found[stage % ("count", "predict")] == 4
    assert found[stage % ("sum", "predict")] >= 0.08
    assert found[stage % ("sum", "decode")] + found[stage % ("sum", "encode")] < 0.08


def test_an_exact_and_a_pattern_route_count_alike(tmp_path: Path) -> None:
    exact, pattern = (
        create_app(
            runtime.prepare(Settings(runtime_dir=tmp_path / d)), fake_service(EchoAlgorithm())
        )
        for d in "ab"
    )
    for client in (exact.test_client(), pattern.test_client()):
        path = "/invocations" if client.application is exact else "/endpoints/e/invocations"
        client.post(path, data=ROWS, content_type="text/csv")
        client.post(path, data=b"x", content_type="text/csv")

    def counted(app: Flask) -> list[str]:
        return sorted(k for k in samples(app.test_client()) if k.startswith("smserve_requests_"))

    assert counted(exact) == counted(pattern)


def test_the_page_path_is_a_setting(tmp_path: Path) -> None:
    settings = runtime.prepare(Settings(runtime_dir=tmp_path, metrics_path="/ops/prom"))
    client = create_app(settings, fake_service(EchoAlgorithm())).test_client()
    assert "smserve_requests_in_flight" in samples(client, "/ops/prom")
    assert client.get("/metrics").status_code == 404
    tf = client.get("/monitoring/prometheus/metrics")
    assert tf.content_type.startswith("text/plain")
    assert "# TYPE :tensorflow:serving:request_count counter" in tf.get_data(as_text=True)


def test_format_labels_are_bounded() -> None:
    assert format_label(None) == format_label("") == ""
    assert format_label("application/x-recordio-protobuf") == "application/x-recordio-protobuf"
    assert format_label("Application/JSON; charset=utf-8") == "application/json"
    assert {format_label(f"x/{n}") for n in range(1000)} == {"other"}


def test_at_debug_one_line_per_request_names_the_inference_id(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    logged = AccessLog(app.wsgi_app)
    app.wsgi_app = logged  # type: ignore[method-assign]
    headers = {"X-Amzn-SageMaker-Inference-Id": "req-42"}
    client = app.test_client()
    with caplog.at_level(logging.DEBUG, logger="smserve.access"):
        client.post("/invocations", data=ROWS, content_type="text/csv", headers=headers)
        client.post("/invocations", data=ROWS, content_type="image/png")
    lines = [r.getMessage() for r in caplog.records if r.name == "smserve.access"]
    assert len(lines) == 2
    assert re.fullmatch(
        r"POST /invocations 200 \d+\.\d\d ms model=model inference_id=req-42", lines[0]
    )
    assert re.fullmatch(r"POST /invocations 415 \d+\.\d\d ms model=model inference_id=-", lines[1])


def test_model_loads_refusals_and_unloads(tmp_path: Path, kmeans_model_dir: Path) -> None:
    models = tmp_path / "models"
    for name in ("alpha", "beta"):
        shutil.copytree(kmeans_model_dir, models / name / "model")
    (models / "empty").mkdir()
    settings = Settings(multi_model=True, models_dir=models, runtime_dir=tmp_path)
    # room for one model's load peak, not for a second beside the first's resident memory
    peak = catalog.estimate(settings, models / "alpha" / "model").peak
    settings = replace(settings, memory_budget_bytes=peak)
    client = create_app(runtime.prepare(settings)).test_client()
    assert client.post("/models", json={"model_name": "e", "url": "empty"}).status_code == 400
    assert client.post("/models", json={"model_name": "a", "url": "alpha/model"}).status_code == 200
    assert client.post("/models", json={"model_name": "b", "url": "beta/model"}).status_code == 507
    assert client.delete("/models/a").status_code == 200
    assert client.post("/models", json={"model_name": "b", "url": "beta/model"}).status_code == 200
    found = samples(client)
    assert found['smserve_model_loads_total{result="success"}'] == 2
    assert found['smserve_model_loads_total{result="failure"}'] == 1
    assert found["smserve_model_load_duration_seconds_count"] == 2
    assert found["smserve_model_loads_refused_total"] == 1
    assert found["smserve_model_unloads_total"] == 1
    assert found["smserve_models_loaded"] == 1
