"""Real gunicorn with three workers: a multi-model registry and metrics that every worker
shares, and a TF Serving repository whose new version every worker picks up.

Each request goes over a new connection, so requests spread over the workers."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.process.servers import Server, running_server

pytestmark = pytest.mark.process

ROW = b"0,0,0,0\n"
ROUNDS = 30  # requests per check: with 3 workers, each almost surely sees several


def request(
    server: Server, method: str, path: str, body: bytes = b"", **headers: str
) -> tuple[int, bytes, dict[str, str]]:
    connection = server.connection()
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        connection.close()


def invoke_statuses(server: Server, name: str) -> set[int]:
    return {
        request(server, "POST", f"/models/{name}/invoke", ROW, **{"Content-Type": "text/csv"})[0]
        for _ in range(ROUNDS)
    }


def test_multi_model_registry_is_consistent_across_workers(
    tmp_path: Path, kmeans_model_dir: Path
) -> None:
    models = tmp_path / "models"
    shutil.copytree(kmeans_model_dir, models / "km")
    env = {
        "SAGEMAKER_MULTI_MODEL": "true",
        "SMSERVE_MODELS_DIR": str(models),
        "SAGEMAKER_MODEL_SERVER_WORKERS": "3",
    }
    with running_server(tmp_path, env) as server:
        load = json.dumps({"model_name": "km", "url": "km"}).encode()
        assert request(server, "POST", "/models", load)[0] == 200
        assert {request(server, "POST", "/models", load)[0] for _ in range(6)} == {409}
        assert invoke_statuses(server, "km") == {200}
        assert request(server, "DELETE", "/models/km")[0] == 200
        assert invoke_statuses(server, "km") == {404}
        ok = f':tensorflow:serving:request_count{{model_name="km",status="OK"}} {ROUNDS}'
        missing = (
            f':tensorflow:serving:request_count{{model_name="km",status="NOT_FOUND"}} {ROUNDS}'
        )
        deadline = time.monotonic() + 30  # each worker writes its counts about once a second
        while True:
            metrics = request(server, "GET", "/monitoring/prometheus/metrics")[1].decode()
            if (ok in metrics and missing in metrics) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert ok in metrics
        assert missing in metrics


def test_every_worker_serves_a_new_version(tmp_path: Path, kmeans_model_dir: Path) -> None:
    base = tmp_path / "models" / "km"
    shutil.copytree(kmeans_model_dir, base / "1")
    env = {
        "MODEL_NAME": "km",
        "MODEL_BASE_PATH": str(tmp_path / "models"),
        "SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS": "0.2",
        "SAGEMAKER_MODEL_SERVER_WORKERS": "3",
    }
    body = b'{"instances": [[0, 0, 0, 0]]}'
    with running_server(tmp_path, env) as server:
        versions = {
            request(server, "POST", "/v1/models/km:predict", body)[2]["X-Model-Version"]
            for _ in range(ROUNDS)
        }
        assert versions == {"1"}
        shutil.copytree(kmeans_model_dir, tmp_path / "staging")
        (tmp_path / "staging").rename(base / "2")
        deadline = time.monotonic() + 60  # polls every 0.2 s; slack for loaded CI machines
        while True:
            answers = [
                request(server, "POST", "/v1/models/km:predict", body) for _ in range(ROUNDS)
            ]
            assert {status for status, _, _ in answers} == {200}  # never a failed request
            versions = {headers["X-Model-Version"] for _, _, headers in answers}
            if versions == {"2"} or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert versions == {"2"}
        # Every worker (each status request may reach any of them) ends with 2 and retires 1.
        in_a_row = 0
        while in_a_row < ROUNDS:
            status = json.loads(request(server, "GET", "/v1/models/km")[1])
            states = [(s["version"], s["state"]) for s in status["model_version_status"]]
            in_a_row = in_a_row + 1 if states == [("2", "AVAILABLE"), ("1", "END")] else 0
            assert in_a_row or time.monotonic() < deadline, states
