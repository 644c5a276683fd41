"""Driving the SageMaker Python SDK's local mode offline: an environment that keeps every call
on this machine, a ``LocalSession`` on a free loopback port, deployments that are always torn
down, and tiny models packed as ``model.tar.gz`` the way SageMaker writes them.

Offline means: dummy credentials and region, every AWS endpoint pointed at a closed loopback
port (a stray boto3 call fails instead of leaving), and the SDK's telemetry switched off with
its own setting (``TelemetryOptOut`` in an SDK defaults file named by
``SAGEMAKER_USER_CONFIG_OVERRIDE``).
"""

from __future__ import annotations

import socket
import subprocess
import tarfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xgboost as xgb
from flask.testing import FlaskClient

from smserve.algorithms.ndarray import write_ndarray_file

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # the SDK's "v2 is deprecated" notice
    from sagemaker.config.config_schema import TELEMETRY_OPT_OUT_PATH
    from sagemaker.local import LocalSession
    from sagemaker.local.image import _SageMakerContainer
    from sagemaker.model import Model
    from sagemaker.utils import resolve_value_from_config

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
REGION = "us-east-1"
CLOSED_PORT_URL = "http://127.0.0.1:9"  # discard port: nothing listens, nothing leaves
TELEMETRY_OFF = (
    "SchemaVersion: '1.0'\nSageMaker:\n  PythonSDK:\n    Modules:\n      TelemetryOptOut: true\n"
)


@contextmanager
def offline_sdk(config_dir: Path) -> Iterator[None]:
    """Environment and one SDK patch for the duration: see the module doc. The patch binds the
    published serving port to 127.0.0.1 (the SDK's compose file publishes on every interface);
    nothing else of the SDK is changed."""
    config = config_dir / "sagemaker-defaults.yaml"
    config.write_text(TELEMETRY_OFF)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "SAGEMAKER_USER_CONFIG_OVERRIDE": str(config),
            "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ENDPOINT_URL": CLOSED_PORT_URL,
        }.items():
            patch.setenv(name, value)
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
            patch.delenv(name, raising=False)
        original = _SageMakerContainer._create_docker_host
        patch.setattr(_SageMakerContainer, "_create_docker_host", _loopback(original))
        yield


def _loopback(original: Any) -> Any:
    def create_docker_host(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        host: dict[str, Any] = original(self, *args, **kwargs)
        if "ports" in host:
            host["ports"] = [f"127.0.0.1:{mapping}" for mapping in host["ports"]]
        return host

    return create_docker_host


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def local_session(container_root: Path) -> LocalSession:
    """A LocalSession serving on a free port, its scratch folders under ``container_root``."""
    session = LocalSession()
    session.config = {
        "local": {
            "local_code": True,
            "serving_port": free_port(),
            "container_root": str(container_root),
        }
    }
    return session


def telemetry_opted_out(session: LocalSession) -> bool:
    """What the SDK's telemetry decorator itself reads before it sends anything."""
    return bool(
        resolve_value_from_config(
            config_path=TELEMETRY_OPT_OUT_PATH, default_value=False, sagemaker_session=session
        )
    )


def sdk_model(image: str, archive: Path, session: LocalSession) -> Model:
    return Model(
        image_uri=image, model_data=f"file://{archive}", role=ROLE, sagemaker_session=session
    )


@contextmanager
def deployed(image: str, archive: Path, session: LocalSession) -> Iterator[str]:
    """``Model.deploy(instance_type="local")``; yields the endpoint name, then deletes it."""
    name = f"smserve-local-{uuid.uuid4().hex[:8]}"
    with stopped_cleanly():
        sdk_model(image, archive, session).deploy(
            initial_instance_count=1, instance_type="local", endpoint_name=name
        )
        try:
            yield name
        finally:
            session.delete_endpoint(name)


@contextmanager
def stopped_cleanly() -> Iterator[None]:
    """Checks that every container the SDK started inside exited 0 when it was stopped (the
    server drains on SIGTERM), then removes them: ``docker-compose down`` through podman's
    Docker API leaves them behind."""
    before = _sdk_containers()
    try:
        yield
    finally:
        started = sorted(_sdk_containers() - before)
        codes = {c: _docker("inspect", "-f", "{{.State.ExitCode}}", c).strip() for c in started}
        if started:
            _docker("rm", "-f", *started)
    assert started, "the SDK started no container"
    assert set(codes.values()) == {"0"}, f"containers did not exit 0 when stopped: {codes}"


def _sdk_containers() -> set[str]:
    # The SDK names its containers <random>-algo-1-<suffix> (host "algo-1").
    names = _docker("ps", "-a", "--format", "{{.Names}}").split()
    return {name for name in names if "-algo-1-" in name}


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout


def pack(files: dict[str, bytes], folder: Path) -> Path:
    """``folder/model.tar.gz`` holding ``files`` at its top level, as a training job leaves it."""
    folder.mkdir(parents=True)
    with tarfile.open(folder / "model.tar.gz", "w:gz") as tar:
        for name, data in files.items():
            (folder / name).write_bytes(data)
            tar.add(folder / name, arcname=name)
            (folder / name).unlink()
    return folder / "model.tar.gz"


def xgboost_model(features: np.ndarray) -> bytes:
    labels = (features[:, 0] + features[:, 1] > 0).astype(np.float32)
    params = {"objective": "binary:logistic", "max_depth": 3, "nthread": 1, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(features, labels), num_boost_round=8)
    return bytes(booster.save_raw("ubj"))


def kmeans_model(centroids: np.ndarray, scratch: Path) -> bytes:
    write_ndarray_file(scratch, centroids)
    return scratch.read_bytes()


# --- test data and in-process answers ----------------------------------------------------------

N_FEATURES = 100  # wide rows: 1 MiB mini-batches of a few hundred records
ROWS_PER_FILE = (900, 600, 1300)  # about 1.8, 1.2 and 2.6 MB of CSV: 2 to 3 mini-batches each
RNG = np.random.default_rng(11)
FEATURES = RNG.normal(size=(sum(ROWS_PER_FILE), N_FEATURES)).astype(np.float32)


def csv_rows(rows: np.ndarray) -> bytes:
    return b"".join(b",".join(repr(float(v)).encode() for v in row) + b"\n" for row in rows)


def write_inputs(folder: Path) -> list[Path]:
    """FEATURES as CSV files of ROWS_PER_FILE rows each, for a Batch Transform job."""
    folder.mkdir()
    bounds = np.cumsum((0, *ROWS_PER_FILE))
    paths = []
    for i, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        paths.append(folder / f"part-{i}.csv")
        paths[-1].write_bytes(csv_rows(FEATURES[start:stop]))
    return paths


def reference(client: FlaskClient, body: bytes, content_type: str, accept: str) -> bytes:
    """The in-process server's answer to ``body``."""
    response = client.post(
        "/invocations", data=body, headers={"Content-Type": content_type, "Accept": accept}
    )
    assert response.status_code == 200, response.data
    return response.data


def assembled_lines(produced: bytes, name: str) -> list[bytes]:
    """The answer lines of a ``.out`` file that Batch Transform assembled with Line, after
    checking it came in two mini-batches or more: AssembleWith=Line adds "\\n" after each
    response, and each response ends in one, so every mini-batch is followed by an empty line."""
    batches = produced.split(b"\n\n")
    assert batches[-1] == b""
    assert len(batches) - 1 >= 2, f"{name}: one mini-batch; max_payload did not split it"
    return b"\n".join(batches[:-1]).split(b"\n")
