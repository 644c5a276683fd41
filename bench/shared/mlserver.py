"""MLServer 1.7.1 (with mlserver-xgboost) serving a model directory's ``xgboost-model``, the
peer every side-by-side benchmark runs against; one launcher for all of them.

MLServer runs from its own virtual environment: it pins other versions of our dependencies,
and uvloop 0.22+ breaks its parallel workers ("There is no current event loop"):

    python3 -m venv .venv-mlserver
    .venv-mlserver/bin/pip install mlserver==1.7.1 mlserver-xgboost==1.7.1 "uvloop<0.22"

It binds 127.0.0.1 only and serves the model as ``m`` (``/v2/models/m/infer``; gRPC's
ModelInfer with ``model_name="m"``)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.shared import harness

MODEL = "m"
READY_TIMEOUT_S = 120
STOP_TIMEOUT_S = 15


@dataclass(frozen=True)
class Ports:
    http: int
    grpc: int


@contextlib.contextmanager
def mlserver(executable: Path, model_dir: Path, scratch: Path, workers: int) -> Iterator[Ports]:
    """MLServer with ``parallel_workers`` = ``workers`` (0: inference in its main process, its
    fastest for one row) until the block ends; stopped by its handle."""
    ports = Ports(http=harness.free_port(), grpc=harness.free_port())
    repo = _repository(model_dir, scratch / "mlserver", ports, workers)
    env = {**os.environ, "MLSERVER_LOGGING_LEVEL": "WARNING"}
    command = [str(executable), "start", str(repo)]
    quiet = subprocess.DEVNULL
    process = subprocess.Popen(command, env=env, stdout=quiet, stderr=quiet)
    try:
        harness.wait_ready(ports.http, process, f"/v2/models/{MODEL}/ready", READY_TIMEOUT_S)
        yield ports
    finally:
        _stop(process)


def _repository(model_dir: Path, repo: Path, ports: Ports, workers: int) -> Path:
    """MLServer's model repository: the model as ``m``, and its settings.json."""
    (repo / MODEL).mkdir(parents=True)
    shutil.copy(model_dir / "xgboost-model", repo / MODEL / "model.json")
    model = {"implementation": "mlserver_xgboost.XGBoostModel", "name": MODEL}
    (repo / MODEL / "model-settings.json").write_text(json.dumps(model))
    server = {"host": "127.0.0.1", "http_port": ports.http, "grpc_port": ports.grpc}
    server |= {"metrics_port": harness.free_port(), "parallel_workers": workers}
    (repo / "settings.json").write_text(json.dumps(server))
    return repo


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)
