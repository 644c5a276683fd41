"""Driving the SageMaker Python SDK v3 offline against the image: an environment that keeps
every call on this machine, the image served by ``docker run`` on a free loopback port, tiny
models packed as ``model.tar.gz``, and in-process references to compare answers with.

Offline means: dummy credentials and region, every AWS endpoint pointed at a closed loopback
port and every proxied HTTP(S) request at the same closed port (loopback excepted), so that a
stray boto3 or ``requests`` call fails instead of leaving; the SDK's telemetry off by its own
setting (``TelemetryOptOut`` in the defaults file named by ``SAGEMAKER_USER_CONFIG_OVERRIDE``).
"""

from __future__ import annotations

import io
import socket
import subprocess
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from smserve.algorithms.ndarray import read_ndarray_file, write_ndarray_file

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
CLOSED_PORT_URL = "http://127.0.0.1:9"  # discard port: nothing listens, nothing leaves
TELEMETRY_OFF = (
    "SchemaVersion: '1.0'\nSageMaker:\n  PythonSDK:\n    Modules:\n      TelemetryOptOut: true\n"
)
CENTROIDS = np.array([[0, 0, 0, 0], [10, 10, 10, 10], [1.5, 16, 14, 23]], dtype=np.float32)


@contextmanager
def offline_sdk(config_dir: Path) -> Iterator[None]:
    config = config_dir / "sagemaker-defaults.yaml"
    config.write_text(TELEMETRY_OFF)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "SAGEMAKER_USER_CONFIG_OVERRIDE": str(config),
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ENDPOINT_URL": CLOSED_PORT_URL,
            "AWS_CONFIG_FILE": str(config_dir / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(config_dir / "no-aws-credentials"),
            "AWS_MAX_ATTEMPTS": "1",
            "HTTPS_PROXY": CLOSED_PORT_URL,
            "HTTP_PROXY": CLOSED_PORT_URL,
            "NO_PROXY": "127.0.0.1,localhost",
        }.items():
            patch.setenv(name, value)
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
            patch.delenv(name, raising=False)
        yield


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# --- models and references ----------------------------------------------------------------------


def xgboost_model(folder: Path) -> Path:
    """``xgboost-model`` (binary:logistic, 4 features, 5 trees) in ``folder``."""
    import xgboost as xgb

    x = features()
    params = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(x, x[:, 0] + x[:, 1] > 0), num_boost_round=5)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))
    return folder


def kmeans_model(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_ndarray_file(folder / "model_algo-1", CENTROIDS)
    return folder


def model_folder(algorithm: str, folder: Path) -> Path:
    return xgboost_model(folder) if algorithm == "xgboost" else kmeans_model(folder)


def archive(folder: Path, target: Path) -> Path:
    """``model.tar.gz`` of ``folder``'s files at its top level, as SageMaker writes it."""
    with tarfile.open(target, "w:gz") as tar:
        for path in sorted(folder.iterdir()):
            tar.add(path, arcname=path.name)
    return target


def features(n: int = 12, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 6, size=(n, 4)).astype(np.float32)


def expected(algorithm: str, model_dir: Path, rows: np.ndarray) -> np.ndarray:
    """In-process predictions in the CSV answer's columns: XGBoost's score (n,); k-means'
    closest_cluster and distance_to_cluster (n, 2)."""
    if algorithm == "xgboost":
        import xgboost as xgb

        model = bytearray((model_dir / "xgboost-model").read_bytes())
        booster = xgb.Booster(params={"nthread": 1}, model_file=model)
        return np.asarray(booster.inplace_predict(rows), dtype=np.float64)
    centroids = read_ndarray_file(model_dir / "model_algo-1").astype(np.float64)
    x = rows.astype(np.float64)
    distances = np.sqrt(((x[:, None, :] - centroids[None]) ** 2).sum(-1))
    return np.column_stack([distances.argmin(axis=1), distances.min(axis=1)])


def assert_answer(algorithm: str, model_dir: Path, rows: np.ndarray, answer: Any) -> None:
    got = np.asarray(answer, dtype=np.float64)
    want = expected(algorithm, model_dir, rows)
    got = got.reshape(want.shape)
    if algorithm == "xgboost":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got[:, 0], want[:, 0])
        np.testing.assert_allclose(got[:, 1], want[:, 1], rtol=1e-5, atol=1e-5)


def csv_numbers(text: str | bytes) -> np.ndarray:
    raw = text.decode() if isinstance(text, bytes) else text
    return np.loadtxt(io.StringIO(raw), delimiter=",", ndmin=2)


# --- the image served by docker run -------------------------------------------------------------


@contextmanager
def served(image: str, model_dir: Path) -> Iterator[int]:
    """``docker run -d -p 127.0.0.1:PORT:8080 -v MODEL:/opt/ml/model:ro IMAGE serve``; yields
    the port once /ping answers 200; the container is removed afterwards."""
    port, name = free_port(), f"smserve-v3-{uuid.uuid4().hex[:8]}"
    command = ["docker", "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:8080"]
    command += ["-v", f"{model_dir}:/opt/ml/model:ro", image, "serve"]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    try:
        wait_for_ping(port)
        yield port
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)


def wait_for_ping(port: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/ping", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise AssertionError(f"no 200 on /ping at port {port} within {timeout_s} s")


def running(image: str) -> set[str]:
    """The ids of the running containers of ``image`` (podman names it localhost/IMAGE)."""
    found = subprocess.run(
        ["docker", "ps", "--format", "{{.ID}} {{.Image}}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = (line.split(" ", 1) for line in found.stdout.splitlines() if " " in line)
    return {cid for cid, name in rows if name in (image, f"localhost/{image}")}


# --- LocalSession: model, endpoint config, endpoint ---------------------------------------------


def loopback(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The SDK's compose file publishes the serving port on every interface; this binds it to
    127.0.0.1 (the one SDK function wrapped, as tests/local_mode does for v2)."""

    def create_docker_host(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        host: dict[str, Any] = original(self, *args, **kwargs)
        if "ports" in host:
            host["ports"] = [f"127.0.0.1:{mapping}" for mapping in host["ports"]]
        return host

    return create_docker_host


def local_session_csv(
    image: str, tarball: Path, root: Path, patch: pytest.MonkeyPatch, rows: np.ndarray
) -> np.ndarray:
    """create_model (``file://`` tarball) -> create_endpoint_config -> create_endpoint with
    ``LocalSession`` (compose runs ``serve``), one CSV invoke_endpoint, delete_endpoint."""
    from sagemaker.core import serializers
    from sagemaker.core.local import LocalSession
    from sagemaker.core.local.image import _SageMakerContainer

    patch.setattr(
        _SageMakerContainer,
        "_create_docker_host",
        loopback(_SageMakerContainer._create_docker_host),
    )
    session = LocalSession()
    root.mkdir()
    session.config = {"local": {"serving_port": free_port(), "container_root": str(root)}}
    client, name = session.sagemaker_client, f"smserve-v3-{uuid.uuid4().hex[:8]}"
    container = {"Image": image, "ModelDataUrl": f"file://{tarball}", "Environment": {}}
    client.create_model(ModelName=name, PrimaryContainer=container)
    variant = {"VariantName": "main", "ModelName": name, "InitialInstanceCount": 1}
    variant["InstanceType"] = "local"
    client.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[variant])
    client.create_endpoint(EndpointName=name, EndpointConfigName=name)
    try:
        reply = session.sagemaker_runtime_client.invoke_endpoint(
            Body=serializers.CSVSerializer().serialize(rows),
            EndpointName=name,
            ContentType="text/csv",
            Accept="text/csv",
        )
        return csv_numbers(reply["Body"].read())
    finally:
        client.delete_endpoint(EndpointName=name)


def local_transform_csv(
    image: str, tarball: Path, root: Path, patch: pytest.MonkeyPatch, rows: np.ndarray
) -> np.ndarray:
    """create_model (``file://`` tarball) -> create_transform_job with ``LocalSession``: the
    SDK serves the image (``SAGEMAKER_BATCH=True``), sends a ``file://`` folder's CSV file
    split by line, writes ``<file>.out`` to a ``file://`` output folder, and stops it."""
    from sagemaker.core.local import LocalSession
    from sagemaker.core.local.image import _SageMakerContainer

    patch.setattr(
        _SageMakerContainer,
        "_create_docker_host",
        loopback(_SageMakerContainer._create_docker_host),
    )
    session = LocalSession()
    inputs, outputs = root / "in", root / "out"
    for folder in (root / "work", inputs, outputs):
        folder.mkdir(parents=True)
    (inputs / "rows.csv").write_text("\n".join(",".join(repr(float(v)) for v in r) for r in rows))
    session.config = {"local": {"serving_port": free_port(), "container_root": str(root / "work")}}
    client, name = session.sagemaker_client, f"smserve-v3-{uuid.uuid4().hex[:8]}"
    container = {"Image": image, "ModelDataUrl": f"file://{tarball}", "Environment": {}}
    client.create_model(ModelName=name, PrimaryContainer=container)
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"file://{inputs}"}}
    client.create_transform_job(
        TransformJobName=name,
        ModelName=name,
        TransformInput={"DataSource": source, "ContentType": "text/csv", "SplitType": "Line"},
        TransformOutput={
            "S3OutputPath": f"file://{outputs}",
            "Accept": "text/csv",
            "AssembleWith": "Line",
        },
        TransformResources={"InstanceType": "local", "InstanceCount": 1},
        # Pinned: without it the SDK takes the container's /execution-parameters, whose
        # BatchStrategy is spelled as SageMaker's contract spells it (MULTI_RECORD), and its
        # own check accepts only the API's spelling (MultiRecord): "Invalid Batch Strategy".
        BatchStrategy="MultiRecord",
    )
    assert client.describe_transform_job(TransformJobName=name)["TransformJobStatus"] == "Completed"
    return csv_numbers((outputs / "rows.csv.out").read_bytes())
