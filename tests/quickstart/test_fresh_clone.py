"""The README's Quickstart as a newcomer runs it: a fresh clone of this repository, no
environment but the one ``./serve`` creates itself, ``./serve --demo`` (XGBoost, then k-means),
answers checked against the cached demo models, and gRPC's ServerLive on the default-on door.

The clone holds the committed tree (``git clone`` of this checkout's HEAD): what a user clones
and what CI tests (a clean clone of main). It never sees the suite's ``.venv``: ``./serve`` runs
with the machine's ``python3`` and a PATH and environment without the suite's virtual
environment, and installs into the clone's own ``.venv``, from PyPI (pip's cache may be warm).
The same clone then shows what happens without grpcio (uninstalled from the clone's
environment): the default-on door is skipped with one warning, a door asked for stops ``serve``
within seconds with one line, and ``./serve`` completes the environment again.

The time from ``git clone`` to the first answer is printed on the terminal (README, Quickstart).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import grpc
import numpy as np
import pytest
import xgboost as xgb
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

from smserve.algorithms.ndarray import read_ndarray_file
from tests.process.servers import Server, free_port, stop, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 900.0  # a cold pip cache downloads XGBoost, SciPy, pyarrow, grpcio...
START_TIMEOUT_S = 120.0
XGBOOST_ROW = ",".join(["1.0"] * 30)  # the README's CSV example (30 features)
IRIS_ROW = "5.1,3.5,1.4,0.2"  # iris' first row, the k-means demo's sample request


def newcomer_env(tmp_path: Path, grpc_port: int | None) -> dict[str, str]:
    """The machine's environment without the suite's virtual environment or any serving
    variable; loopback only; the demo models cached in ``tmp_path``."""
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "SAGEMAKER_", "SMSERVE_", "SM_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    suite_bin = str(ROOT / ".venv" / "bin")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != suite_bin)
    env["SMSERVE_BIND_HOST"] = "127.0.0.1"
    env["SMSERVE_CACHE_DIR"] = str(tmp_path / "cache")
    env["SAGEMAKER_MODEL_SERVER_WORKERS"] = "1"
    if grpc_port is not None:
        env["SMSERVE_GRPC_PORT"] = str(grpc_port)
    return env


@contextlib.contextmanager
def started(command: list[str], cwd: Path, env: Mapping[str, str], log: Path) -> Iterator[Server]:
    """``command`` (a server on ``--port``) started in its own session; always stopped."""
    port = int(command[command.index("--port") + 1])
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, cwd=cwd, env=dict(env), stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    server = Server(process, port, log)
    try:
        yield server
    finally:
        stop(process)


def post_csv(server: Server, row: str) -> dict[str, object]:
    connection = server.connection()
    try:
        headers = {"Content-Type": "text/csv", "Accept": "application/json"}
        connection.request("POST", "/invocations", body=row, headers=headers)
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, body
        answer: dict[str, object] = json.loads(body)
        return answer
    finally:
        connection.close()


def grpc_live(port: int) -> bool:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = GRPCInferenceServiceStub(channel)
        return bool(stub.ServerLive(pb.ServerLiveRequest(), timeout=10).live)


def expected_xgboost(cache: Path) -> float:
    booster = xgb.Booster()
    booster.load_model(bytearray((cache / "demo-xgboost" / "xgboost-model").read_bytes()))
    row = np.fromstring(XGBOOST_ROW, sep=",", dtype=np.float32).reshape(1, -1)
    return float(booster.inplace_predict(row)[0])


def expected_cluster(cache: Path) -> int:
    centroids = read_ndarray_file(cache / "demo-kmeans" / "model_algo-1")
    row = np.fromstring(IRIS_ROW, sep=",", dtype=np.float32)
    return int(np.argmin(((centroids - row) ** 2).sum(axis=1)))


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """A fresh clone of this checkout and the monotonic time its cloning began."""
    if shutil.which("git") is None:
        pytest.fail("git is needed to clone the repository")
    destination = tmp_path_factory.mktemp("newcomer") / "smserve"
    began = time.monotonic()
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(destination)], check=True)
    return destination, began


def test_serve_demo_on_a_fresh_clone_answers_csv_and_grpc(
    clone: tuple[Path, float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory, began = clone
    port, grpc_port = free_port(), free_port()
    env = newcomer_env(tmp_path, grpc_port)
    command = ["./serve", "--demo", "--port", str(port)]
    with started(command, directory, env, tmp_path / "demo.log") as server:
        wait_until_ready(server, INSTALL_TIMEOUT_S)
        answer = post_csv(server, XGBOOST_ROW)
        seconds = time.monotonic() - began
        assert grpc_live(grpc_port)
        predictions = answer["predictions"]
        assert isinstance(predictions, list)
        score = predictions[0]["score"]
    assert score == pytest.approx(expected_xgboost(tmp_path / "cache"), rel=1e-6)
    assert "Traceback" not in server.output()
    with capsys.disabled():
        print(f"\nquickstart: git clone -> first answer of ./serve --demo: {seconds:.0f} s")


def test_without_grpcio_the_default_door_is_skipped_with_one_warning(
    clone: tuple[Path, float], tmp_path: Path
) -> None:
    directory, _ = clone
    _uninstall_grpcio(directory)
    port = free_port()
    command = _installed_demo(directory, port)
    with started(command, directory, newcomer_env(tmp_path, None), tmp_path / "s.log") as server:
        wait_until_ready(server, START_TIMEOUT_S)
        post_csv(server, XGBOOST_ROW)
        output = server.output()
    warnings = [line for line in output.splitlines() if "package grpcio" in line]
    assert len(warnings) == 1, output
    assert "[WARNING]" in warnings[0]
    assert "smserve[grpc]" in warnings[0]
    assert "Traceback" not in output


def test_without_grpcio_a_requested_door_stops_serve_with_one_line(
    clone: tuple[Path, float], tmp_path: Path
) -> None:
    directory, _ = clone
    _uninstall_grpcio(directory)
    port = free_port()
    command = _installed_demo(directory, port)
    env = newcomer_env(tmp_path, free_port())
    began = time.monotonic()
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode != 0
    assert time.monotonic() - began < 30
    lines = [line for line in done.stderr.splitlines() if "package grpcio" in line]
    assert len(lines) == 1, done.stderr
    assert "SMSERVE_GRPC_PORT" in lines[0]
    assert "pip install 'smserve[grpc]'" in lines[0]
    assert "Traceback" not in done.stderr


def test_serve_demo_kmeans_completes_the_environment_and_answers(
    clone: tuple[Path, float], tmp_path: Path
) -> None:
    directory, _ = clone
    _uninstall_grpcio(directory)  # as a .venv made by an older ./serve would be
    port, grpc_port = free_port(), free_port()
    command = ["./serve", "--demo", "kmeans", "--port", str(port)]
    env = newcomer_env(tmp_path, grpc_port)
    with started(command, directory, env, tmp_path / "kmeans.log") as server:
        wait_until_ready(server, INSTALL_TIMEOUT_S)
        answer = post_csv(server, IRIS_ROW)
        assert grpc_live(grpc_port)
    predictions = answer["predictions"]
    assert isinstance(predictions, list)
    assert predictions[0]["closest_cluster"] == expected_cluster(tmp_path / "cache")


def _installed_demo(directory: Path, port: int) -> list[str]:
    """``smserve serve --demo`` from the clone's own environment, without ./serve."""
    return [str(directory / ".venv" / "bin" / "smserve"), "serve", "--demo", "--port", str(port)]


def _uninstall_grpcio(directory: Path) -> None:
    python = directory / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.fail("the clone has no .venv: the first test's ./serve did not create it")
    subprocess.run(
        [str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "grpcio"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    probe = subprocess.run([str(python), "-c", "import grpc"], capture_output=True)
    assert probe.returncode != 0


def test_serve_installs_the_extras_the_image_installs() -> None:
    """``./serve``'s extras are the Dockerfile's fixed ``--extra`` list."""
    serve = (ROOT / "serve").read_text()
    extras_line = next(line for line in serve.splitlines() if line.startswith("extras="))
    serve_extras = set(extras_line.split("=", 1)[1].split("#")[0].strip().strip('"').split(","))
    dockerfile = (ROOT / "Dockerfile").read_text()
    image_extras = {
        word.strip('"')
        for word in dockerfile.split("--extra ")[1:]
        for word in [word.split()[0]]
        if not word.startswith('"$')
    }
    assert serve_extras == image_extras
