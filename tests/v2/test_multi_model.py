"""The V2 door over a multi-model endpoint: a model loaded through ``POST /models`` is served
under ``/v2/models/<name>`` with the numbers ``/invocations`` gives, and gone once unloaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.repository import runtime

ROWS = [[0.0, 0.0, 0.0, 0.0], [9.0, 9.0, 9.0, 9.0]]


def _client(tmp_path: Path, kmeans_model_dir: Path) -> FlaskClient:
    shutil.copytree(kmeans_model_dir, tmp_path / "models" / "alpha" / "model")
    settings = runtime.prepare(
        Settings(multi_model=True, models_dir=tmp_path / "models", runtime_dir=tmp_path / "run")
    )
    client = create_app(settings).test_client()
    loaded = client.post("/models", json={"model_name": "alpha", "url": "alpha/model"})
    assert loaded.status_code == 200
    return client


def _infer(client: FlaskClient, name: str) -> tuple[int, dict[str, object]]:
    tensor = {"name": "x", "shape": [2, 4], "datatype": "FP32", "data": ROWS}
    answer = client.post(f"/v2/models/{name}/infer", json={"inputs": [tensor]})
    return answer.status_code, json.loads(answer.data)


def test_a_loaded_model_is_served_by_the_v2_door(tmp_path: Path, kmeans_model_dir: Path) -> None:
    client = _client(tmp_path, kmeans_model_dir)
    assert client.get("/v2/health/ready").get_json() == {"ready": True}
    metadata = client.get("/v2/models/alpha").get_json()
    assert (metadata["name"], metadata["versions"]) == ("alpha", ["1"])
    status, body = _infer(client, "alpha")
    assert status == 200
    outputs = {o["name"]: o["data"] for o in body["outputs"]}  # type: ignore[attr-defined]
    csv = "\n".join(",".join(str(v) for v in row) for row in ROWS).encode()
    expected = client.post(
        "/invocations",
        data=csv,
        headers={"Content-Type": "text/csv", "X-Amzn-SageMaker-Target-Model": "alpha"},
    ).get_json()["predictions"]
    assert outputs["closest_cluster"] == [p["closest_cluster"] for p in expected]
    assert outputs["distance_to_cluster"] == [p["distance_to_cluster"] for p in expected]


def test_an_unloaded_model_is_unknown_to_the_v2_door(
    tmp_path: Path, kmeans_model_dir: Path
) -> None:
    client = _client(tmp_path, kmeans_model_dir)
    assert client.delete("/models/alpha").status_code == 200
    status, body = _infer(client, "alpha")
    assert status == 404
    assert body == {"error": "Request for unknown model: 'alpha' is not found"}
    assert client.get("/v2/models/alpha/ready").status_code == 404
