"""The real tritonclient.grpc against a running ``smserve serve`` (nginx in front of two
gunicorn workers, gRPC in each worker) holding a TF Serving layout (``xgb`` versions 1 and 2,
``km``): health, metadata, raw and typed infers with the numbers of REST V2 and
/invocations; gRPC only in the workers, never in the master that forks them; clients that
stall or send garbage hold nothing; a killed worker's replacement serves gRPC again; and
KServe's own Python client, from its own environment, gets the same numbers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub
from tritonclient.utils import InferenceServerException

from smserve.algorithms.ndarray import write_ndarray_file
from tests.process.servers import Server, free_port, running_server
from tests.v2grpc import processes
from tests.v2grpc.conftest import ROWS

pytestmark = pytest.mark.process


def layout(root: Path, xgb_models: dict[str, bytes]) -> Path:
    """xgb versions 1 (binary) and 2 (multiclass), and km: the models.config naming them."""
    for version, kind in ((1, "binary"), (2, "multiclass")):
        (root / "xgb" / str(version)).mkdir(parents=True)
        (root / "xgb" / str(version) / "xgboost-model").write_bytes(xgb_models[kind])
    (root / "km" / "1").mkdir(parents=True)
    centroids = np.array([[0, 0, 0, 0], [10, 10, 10, 10]], dtype=np.float32)
    write_ndarray_file(root / "km" / "1" / "model_algo-1", centroids)
    config = root / "models.config"
    config.write_text(
        "model_config_list {\n"
        f"  config {{ name: 'xgb' base_path: '{root / 'xgb'}'\n"
        "           model_version_policy { all {} } }\n"
        f"  config {{ name: 'km' base_path: '{root / 'km'}' }}\n"
        "}\n"
    )
    return config


def grpc_env(config: Path, port: int, **extra: str) -> dict[str, str]:
    return {
        "SMSERVE_MODEL_CONFIG_FILE": str(config),
        "SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS": "0",
        "SMSERVE_BIND_HOST": "127.0.0.1",
        "SMSERVE_GRPC_PORT": str(port),
        "SMSERVE_FRONTEND": "nginx",
        "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
        **extra,
    }


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, _xgb_models: dict[str, bytes]) -> Path:
    return layout(tmp_path_factory.mktemp("grpc-models"), _xgb_models)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, config: Path) -> Iterator[tuple[Server, str]]:
    port = free_port()
    env = grpc_env(config, port, SMSERVE_CLIENT_HEADER_TIMEOUT_S="2")
    with running_server(tmp_path_factory.mktemp("grpc-logs"), env) as server:
        address = f"127.0.0.1:{port}"
        wait_for_grpc(address)
        yield server, address


@pytest.fixture
def client(served: tuple[Server, str]) -> Iterator[triton_grpc.InferenceServerClient]:
    client = triton_grpc.InferenceServerClient(served[1])
    yield client
    client.close()


def wait_for_grpc(address: str, timeout_s: float = 60.0) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = GRPCInferenceServiceStub(channel)
        stub.ServerReady(pb.ServerReadyRequest(), wait_for_ready=True, timeout=timeout_s)


def rows_input(rows: np.ndarray) -> triton_grpc.InferInput:
    tensor = triton_grpc.InferInput("input__0", list(rows.shape), "FP32")
    tensor.set_data_from_numpy(rows)
    return tensor


def test_health_and_metadata(client: triton_grpc.InferenceServerClient) -> None:
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("xgb")
    assert client.is_model_ready("xgb", "1")
    assert not client.is_model_ready("xgb", "3")
    assert not client.is_model_ready("nope")
    assert client.get_server_metadata(as_json=True)["name"] == "smserve"
    metadata = client.get_model_metadata("xgb", as_json=True)
    assert metadata["versions"] == ["1", "2"]
    assert metadata["inputs"] == [{"name": "input__0", "datatype": "FP32", "shape": ["-1", "4"]}]


def test_infer_gives_the_numbers_of_rest_v2_and_invocations(
    client: triton_grpc.InferenceServerClient, served: tuple[Server, str]
) -> None:
    server = served[0]
    names = ("predict", "predicted_label", "contributions")
    wanted = [triton_grpc.InferRequestedOutput(name) for name in names]
    result = client.infer("xgb", [rows_input(ROWS)], outputs=wanted, request_id="42")
    assert (result.get_response().id, result.get_response().model_version) == ("42", "2")
    rest = triton_http.InferenceServerClient(f"127.0.0.1:{server.port}")
    tensor = triton_http.InferInput("input__0", list(ROWS.shape), "FP32")
    tensor.set_data_from_numpy(ROWS, binary_data=True)
    rest_wanted = [triton_http.InferRequestedOutput(name, binary_data=True) for name in names]
    over_rest = rest.infer("xgb", [tensor], outputs=rest_wanted)
    for name in names:
        np.testing.assert_array_equal(result.as_numpy(name), over_rest.as_numpy(name))
    scores = np.array([row["score"] for row in invocations(server, ROWS)], dtype=np.float32)
    np.testing.assert_array_equal(result.as_numpy("predict"), scores)
    assert result.as_numpy("predicted_label").tolist() == scores.argmax(axis=1).tolist()


def test_typed_tensors_and_an_older_version(served: tuple[Server, str]) -> None:
    with grpc.insecure_channel(served[1]) as channel:
        stub = GRPCInferenceServiceStub(channel)
        request = pb.ModelInferRequest(model_name="xgb", model_version="1")
        tensor = request.inputs.add(name="x", datatype="FP64", shape=ROWS.shape)
        tensor.contents.fp64_contents.extend(ROWS.ravel().tolist())
        typed = stub.ModelInfer(request)
        assert typed.model_version == "1"
        raw = stub.ModelInfer(
            pb.ModelInferRequest(
                model_name="xgb",
                model_version="1",
                inputs=[
                    pb.ModelInferRequest.InferInputTensor(
                        name="x", datatype="FP32", shape=ROWS.shape
                    )
                ],
                raw_input_contents=[ROWS.tobytes()],
            )
        )
    assert (
        list(typed.outputs[0].contents.fp32_contents)
        == np.frombuffer(raw.raw_output_contents[0], "<f4").tolist()
    )


def test_errors_reach_tritonclient_as_status_codes(
    client: triton_grpc.InferenceServerClient,
) -> None:
    with pytest.raises(InferenceServerException, match=r"the model takes \[-1, 4\]") as caught:
        client.infer("xgb", [rows_input(ROWS[:, :2].copy())])
    assert caught.value.status() == "StatusCode.INVALID_ARGUMENT"
    with pytest.raises(InferenceServerException, match="'nope' is not found") as caught:
        client.infer("nope", [rows_input(ROWS)])
    assert caught.value.status() == "StatusCode.NOT_FOUND"


def test_grpc_lives_in_the_workers_only(served: tuple[Server, str]) -> None:
    supervisor = served[0].process.pid
    master, workers = processes.gunicorn_tree(supervisor)
    assert len(workers) == 2
    assert all(processes.holds_grpc(pid) for pid in workers)
    assert not processes.holds_grpc(master)  # it forks: gRPC state must never be in it
    assert not processes.holds_grpc(supervisor)


def test_stalled_and_garbage_clients_hold_nothing(served: tuple[Server, str]) -> None:
    port = int(served[1].rsplit(":", 1)[1])
    stalled = [processes.stalled_call(port) for _ in range(48)]
    junk = [
        processes.garbage(port, data)
        for data in (b"GET / HTTP/1.1\r\n\r\n", os.urandom(4096), processes.PREFACE + b"\xff" * 64)
    ]
    silent = processes.garbage(port, b"")
    started = time.monotonic()
    with grpc.insecure_channel(served[1]) as channel:
        stub = GRPCInferenceServiceStub(channel)
        request = pb.ModelInferRequest(model_name="km", raw_input_contents=[ROWS.tobytes()])
        request.inputs.add(name="x", datatype="FP32", shape=ROWS.shape)
        for _ in range(20):
            assert stub.ModelInfer(request, timeout=10).model_name == "km"
    assert time.monotonic() - started < 10
    assert all(processes.closed_within(sock, 5) for sock in junk)
    assert processes.closed_within(silent, 10)  # the handshake timeout (2 s here)
    for sock in (*stalled, *junk, silent):
        sock.close()


def test_a_killed_worker_is_replaced_and_serves_grpc(served: tuple[Server, str]) -> None:
    supervisor = served[0].process.pid
    master, workers = processes.gunicorn_tree(supervisor)
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = processes.children(master)
        if len(now) == 2 and workers[0] not in now and all(map(processes.holds_grpc, now)):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"no replacement worker:\n{served[0].output()}")
    wait_for_grpc(served[1])
    for _ in range(20):  # new connections reach both workers
        with grpc.insecure_channel(served[1]) as channel:
            assert GRPCInferenceServiceStub(channel).ServerLive(pb.ServerLiveRequest()).live


KSERVE_PYTHON = Path(__file__).parents[2] / ".venv-kserve" / "bin" / "python"


@pytest.mark.skipif(not KSERVE_PYTHON.exists(), reason="no .venv-kserve: ./run-tests makes it")
def test_kserves_client_gets_the_numbers_of_tritonclient(
    client: triton_grpc.InferenceServerClient, served: tuple[Server, str]
) -> None:
    script = Path(__file__).with_name("kserve_client.py")
    command = [str(KSERVE_PYTHON), str(script), served[1], "xgb", json.dumps(ROWS.tolist())]
    seen = json.loads(subprocess.run(command, capture_output=True, check=True, timeout=120).stdout)
    assert (seen["live"], seen["ready"], seen["model_ready"]) == (True, True, True)
    assert not seen["unknown_ready"]
    want = client.infer("xgb", [rows_input(ROWS)]).as_numpy("predict")
    for binary in ("True", "False"):  # raw and typed tensors
        answer = seen[f"binary={binary}"]
        assert answer["id"] == "k-1"
        np.testing.assert_array_equal(np.array(answer["outputs"]["predict"], np.float32), want)


def invocations(server: Server, rows: np.ndarray) -> list[dict[str, list[float]]]:
    csv = "\n".join(",".join(repr(float(v)) for v in row) for row in rows)
    connection = server.connection()
    try:
        headers = {"Content-Type": "text/csv", "Accept": "application/json"}
        connection.request("POST", "/invocations", csv, headers)
        response = connection.getresponse()
        assert response.status == 200
        predictions: list[dict[str, list[float]]] = json.loads(response.read())["predictions"]
        return predictions
    finally:
        connection.close()
