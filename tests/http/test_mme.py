"""Multi-model endpoints: the /models lifecycle with real k-means models, and two apps
sharing one run directory standing for two gunicorn workers."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from smserve.algorithms import catalog
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.config import MIB, Settings
from smserve.http.app import create_app
from smserve.repository import runtime
from smserve.resources import Resources

CSV_ROW = b"0,0,0,0\n"


@pytest.fixture
def models_dir(tmp_path: Path, kmeans_model_dir: Path) -> Path:
    root = tmp_path / "models"
    for name in ("alpha", "beta", "gamma"):
        shutil.copytree(kmeans_model_dir, root / name / "model")
    return root


@pytest.fixture
def settings(tmp_path: Path, models_dir: Path) -> Settings:
    base = Settings(multi_model=True, models_dir=models_dir, runtime_dir=tmp_path / "run")
    return runtime.prepare(base)


def worker(settings: Settings) -> FlaskClient:
    app: Flask = create_app(settings)
    return app.test_client()


@pytest.fixture
def client(settings: Settings) -> FlaskClient:
    return worker(settings)


def load(client: FlaskClient, name: str, url: str | None = None) -> int:
    body = {"model_name": name, "url": url or f"{name}/model"}
    return client.post("/models", json=body).status_code


def invoke(client: FlaskClient, name: str) -> int:
    return client.post(f"/models/{name}/invoke", data=CSV_ROW, content_type="text/csv").status_code


def test_lifecycle(client: FlaskClient, models_dir: Path) -> None:
    assert client.get("/ping").status_code == 200
    assert client.get("/models").get_json() == {"models": []}
    assert load(client, "alpha") == 200
    response = client.post(
        "/models", json={"model_name": "alpha", "url": str(models_dir / "alpha/model")}
    )
    assert (response.status_code, response.get_json()["error"]) == (
        409,
        "Model alpha is already registered.",
    )
    assert client.get("/models").get_json() == {
        "models": [{"modelName": "alpha", "modelUrl": "alpha/model"}]
    }
    assert client.get("/models/alpha").get_json() == {
        "modelName": "alpha",
        "modelUrl": "alpha/model",
    }
    answer = client.post("/models/alpha/invoke", data=CSV_ROW, content_type="text/csv")
    assert answer.status_code == 200
    assert answer.headers["X-Model-Version"] == "1"
    assert client.delete("/models/alpha").get_json() == {"status": 'Model "alpha" unregistered'}
    after = client.post("/models/alpha/invoke", data=CSV_ROW, content_type="text/csv")
    assert (after.status_code, after.get_json()["error"]) == (404, "Model not found: alpha")
    assert client.delete("/models/alpha").status_code == 404
    assert client.get("/models/alpha").status_code == 404


def test_invocations_use_the_target_model_header(client: FlaskClient) -> None:
    assert load(client, "beta") == 200
    response = client.post(
        "/invocations",
        data=CSV_ROW,
        content_type="text/csv",
        headers={"X-Amzn-SageMaker-Target-Model": "beta"},
    )
    assert (response.status_code, response.headers["X-Model-Version"]) == (200, "1")
    unknown = client.post(
        "/invocations",
        data=CSV_ROW,
        content_type="text/csv",
        headers={"X-Amzn-SageMaker-Target-Model": "nope"},
    )
    assert unknown.status_code == 404
    missing = client.post("/invocations", data=CSV_ROW, content_type="text/csv")
    assert missing.status_code == 400
    assert "X-Amzn-SageMaker-Target-Model" in missing.get_json()["error"]


def test_loaded_models_answer_the_tf_serving_api(client: FlaskClient) -> None:
    assert load(client, "beta") == 200
    predict = client.post("/v1/models/beta:predict", json={"instances": [[0, 0, 0, 0]]})
    assert predict.status_code == 200
    assert predict.get_json()["predictions"][0]["closest_cluster"] == 0.0
    assert (
        client.get("/v1/models/beta").get_json()["model_version_status"][0]["state"] == "AVAILABLE"
    )
    assert client.get("/v1/models/nope").status_code == 404


def test_a_load_past_the_memory_budget_is_507_and_loads_nothing(
    tmp_path: Path, models_dir: Path
) -> None:
    cost = catalog.estimate(Settings(), models_dir / "alpha" / "model")
    budget = cost.resident + cost.peak - 1  # room to load one model, not a second
    settings = Settings(
        multi_model=True, models_dir=models_dir, runtime_dir=tmp_path, memory_budget_bytes=budget
    )
    client = worker(runtime.prepare(settings))
    assert load(client, "alpha") == 200
    refused = client.post("/models", json={"model_name": "beta", "url": "beta/model"})
    assert refused.status_code == 507
    assert "SMSERVE_MEMORY_BUDGET_MB" in refused.get_json()["error"]
    assert [m["modelName"] for m in client.get("/models").get_json()["models"]] == ["alpha"]
    assert invoke(client, "beta") == 404
    assert client.delete("/models/alpha").status_code == 200
    assert load(client, "beta") == 200


def test_pagination(client: FlaskClient) -> None:
    for name in ("gamma", "alpha", "beta"):
        assert load(client, name) == 200
    first = client.get("/models?max_results=2").get_json()
    assert [m["modelName"] for m in first["models"]] == ["alpha", "beta"]
    assert first["nextPageToken"] == "beta"
    second = client.get(f"/models?max_results=2&next_page_token={first['nextPageToken']}")
    assert second.get_json() == {"models": [{"modelName": "gamma", "modelUrl": "gamma/model"}]}
    assert client.get("/models?max_results=0").status_code == 400


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"model_name": "x", "url": "/etc"}, "outside the models directory"),
        ({"model_name": "x", "url": "../../etc"}, "outside the models directory"),
        ({"model_name": "x", "url": "missing/model"}, "does not exist"),
        ({"model_name": "", "url": "alpha/model"}, "model name '' must be 1 to 1024 characters"),
        ({"model_name": 7, "url": "alpha/model"}, "model_name must be a string"),
        # schemathesis found the first a 500: the OS's refusals are the client's mistake too
        ({"model_name": "x", "url": "alpha\u0000/model"}, "not a usable path"),
        ({"model_name": "x", "url": "alpha/\udb45"}, "must be JSON"),  # orjson refuses it
        ({"model_name": "x", "url": "a" * 300}, "not a readable model folder"),  # over NAME_MAX
        ({"url": "alpha/model"}, "model_name"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_load_requests_are_400(client: FlaskClient, body: object, fragment: str) -> None:
    response = client.post("/models", json=body)
    assert response.status_code == 400
    assert fragment in response.get_json()["error"]


def test_a_model_that_does_not_load_is_400_and_not_registered(
    client: FlaskClient, models_dir: Path
) -> None:
    (models_dir / "broken").mkdir()
    (models_dir / "broken" / "model_algo-1").write_bytes(b"not an ndarray")
    response = client.post("/models", json={"model_name": "broken", "url": "broken"})
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("Unable to load model broken")
    assert client.get("/models").get_json() == {"models": []}


def test_workers_stay_consistent(settings: Settings) -> None:
    first, second = worker(settings), worker(settings)
    assert load(first, "alpha") == 200
    assert invoke(second, "alpha") == 200  # loaded in the second worker on first use
    assert load(second, "alpha") == 409
    assert second.delete("/models/alpha").status_code == 200
    assert invoke(first, "alpha") == 404
    assert first.get("/models").get_json() == {"models": []}
    assert load(first, "alpha") == 200  # re-registering works, and both see it
    assert invoke(second, "alpha") == 200


def test_concurrent_loads_of_one_name_register_it_once(settings: Settings) -> None:
    workers = [worker(settings) for _ in range(4)]
    statuses: list[int] = []
    threads = [
        threading.Thread(target=lambda w=w: statuses.append(load(w, "gamma"))) for w in workers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 409, 409, 409]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"[" * 30_000 + b"]" * 30_000, 400, "the body must be JSON"),
        (b'{"model_name": "\\ud800", "url": "alpha/model"}', 400, "the body must be JSON"),
        (b'{"model_name": "a", "url": "' + b"x" * 70_000 + b'"}', 413, "at most 65536 bytes"),
        (b"[1, 2]", 400, "must be a JSON object"),
    ],
    ids=["deeply-nested", "lone-surrogate", "oversized", "not-an-object"],
)
def test_a_hostile_registration_body_is_a_4xx(
    client: FlaskClient, body: bytes, status: int, message: str
) -> None:
    """A deeply nested document was a RecursionError (a 500); none is ever parsed whole now."""
    response = client.post("/models", data=body, content_type="application/json")
    assert response.status_code == status
    assert message in response.get_json()["message"]


def test_the_default_budget_follows_the_container_memory_limit(tmp_path: Path) -> None:
    # A 512 MiB, 1-CPU container (SMSERVE_MEMORY_BUDGET_MB unset): one worker, the budget's
    # floor; 2 MB k-means models load until the next one's peak would not fit, then 507.
    folder = tmp_path / "models" / "wide"
    folder.mkdir(parents=True)
    write_ndarray_file(folder / "model_algo-1", np.zeros((1000, 500), np.float32))
    small = Resources(1.0, 512 * MIB, "cgroup v2 CPU quota", "cgroup v2 memory limit")
    environ = {
        "SAGEMAKER_MULTI_MODEL": "true",
        "SMSERVE_MODELS_DIR": str(tmp_path / "models"),
        "SMSERVE_RUNTIME_DIR": str(tmp_path / "run"),
    }
    settings = Settings.from_env(environ, small)
    assert (settings.workers, settings.memory_budget_bytes) == (1, small.model_budget(1))
    cost = catalog.estimate(settings, folder)
    assert settings.memory_budget_bytes is not None
    fits = (settings.memory_budget_bytes - cost.peak) // cost.resident + 1
    assert fits >= 2
    client = worker(settings)
    statuses = [load(client, f"m{i}", "wide") for i in range(fits + 1)]
    assert statuses == [200] * fits + [507]
