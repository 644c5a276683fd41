"""Train with the real ``smserve train`` in a temporary /opt/ml layout, serve the result with
``smserve serve`` on a free port, and check the HTTP predictions against the same model used
in process."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms.ndarray import read_ndarray_file

pytestmark = pytest.mark.process

STARTUP_TIMEOUT_S = 60.0
TRAIN_TIMEOUT_S = 120.0


def smserve_command() -> list[str]:
    script = Path(sys.executable).with_name("smserve")
    if script.is_file():
        return [str(script)]
    found = shutil.which("smserve")
    if found is None:
        pytest.skip("the smserve console script is not installed")
    return [found]


def rows(n_rows: int = 90, n_features: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, n_rows)
    centres = np.array([[0.0] * n_features, [8.0] * n_features, [-8.0] * n_features])
    features = centres[labels] + rng.normal(0, 1.0, (n_rows, n_features))
    return features.astype(np.float32), labels.astype(np.float32)


def csv_text(table: np.ndarray) -> str:
    buffer = io.StringIO()
    np.savetxt(buffer, table, delimiter=",", fmt="%.9g")
    return buffer.getvalue()


def layout(base: Path, hyperparameters: dict[str, str], train_csv: str) -> None:
    config, data = base / "input" / "config", base / "input" / "data" / "train"
    config.mkdir(parents=True)
    data.mkdir(parents=True)
    (config / "hyperparameters.json").write_text(json.dumps(hyperparameters))
    (config / "inputdataconfig.json").write_text(json.dumps({"train": {"ContentType": "text/csv"}}))
    (data / "train.csv").write_text(train_csv)


def train(base: Path) -> None:
    environ = {**os.environ, "SMSERVE_TRAINING_BASE_DIR": str(base)}
    done = subprocess.run(
        [*smserve_command(), "train"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=TRAIN_TIMEOUT_S,
        check=False,
    )
    failure = base / "output" / "failure"
    assert done.returncode == 0, done.stdout + done.stderr
    assert not failure.exists()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def served(model_dir: Path, log: Path) -> Iterator[str]:
    """``smserve serve`` on a free port; yields its base URL and stops it afterwards."""
    port = free_port()
    environ = {
        **os.environ,
        "SM_MODEL_DIR": str(model_dir),
        "SAGEMAKER_BIND_TO_PORT": str(port),
        "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
        "SMSERVE_GRACEFUL_TIMEOUT_S": "2",
    }
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [*smserve_command(), "serve"], env=environ, stdout=sink, stderr=subprocess.STDOUT
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_ready(url, server, log)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=5)


def wait_until_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"smserve serve exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/ping", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    pytest.fail(
        f"smserve serve did not answer /ping within {STARTUP_TIMEOUT_S} s:\n{log.read_text()}"
    )


def predict(url: str, features: np.ndarray) -> list[dict[str, object]]:
    request = urllib.request.Request(
        f"{url}/invocations",
        data=csv_text(features).encode(),
        headers={"Content-Type": "text/csv", "Accept": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        predictions: list[dict[str, object]] = json.loads(response.read())["predictions"]
    return predictions


def test_xgboost_trained_by_the_cli_serves_the_same_predictions(tmp_path: Path) -> None:
    import xgboost as xgb

    features, labels = rows()
    binary = (labels == 1).astype(np.float32)
    hyperparameters = {"num_round": "6", "objective": "binary:logistic", "max_depth": "3"}
    layout(tmp_path / "ml", hyperparameters, csv_text(np.column_stack([binary, features])))
    train(tmp_path / "ml")
    model_dir = tmp_path / "ml" / "model"
    booster = xgb.Booster()
    booster.load_model(bytearray((model_dir / "xgboost-model").read_bytes()))
    expected = booster.inplace_predict(features)
    with served(model_dir, tmp_path / "serve.log") as url:
        scores = [float(p["score"]) for p in predict(url, features)]  # type: ignore[arg-type]
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    assert ((np.asarray(scores) > 0.5) == (binary == 1)).mean() > 0.9


def test_kmeans_trained_by_the_cli_serves_nearest_centroids(tmp_path: Path) -> None:
    features, labels = rows()
    hyperparameters = {"algorithm": "kmeans", "k": "3", "feature_dim": "3", "epochs": "3"}
    layout(tmp_path / "ml", hyperparameters, csv_text(np.column_stack([labels, features])))
    train(tmp_path / "ml")
    model_dir = tmp_path / "ml" / "model"
    centroids = read_ndarray_file(model_dir / "model_algo-1").astype(np.float64)
    assert centroids.shape == (3, 3)
    squared = ((features[:, None, :].astype(np.float64) - centroids[None]) ** 2).sum(axis=2)
    with served(model_dir, tmp_path / "serve.log") as url:
        predictions = predict(url, features)
    closest = np.array([p["closest_cluster"] for p in predictions], dtype=np.int64)
    distance = np.array([p["distance_to_cluster"] for p in predictions], dtype=np.float64)
    np.testing.assert_array_equal(closest, squared.argmin(axis=1))
    np.testing.assert_allclose(distance, np.sqrt(squared.min(axis=1)), rtol=1e-5, atol=1e-5)
