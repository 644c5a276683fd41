"""The gRPC door starts, stops and fails with the server: a call in flight at SIGTERM is
answered (new ones are refused) and the server exits 0; a gRPC port it cannot bind stops the
whole server with a non-zero status; a call before the workers listen is UNAVAILABLE."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

from tests.process.servers import SMSERVE, free_port, running_server, server_env
from tests.v2grpc.conftest import ROWS, rpc_error
from tests.v2grpc.test_server import grpc_env, layout, wait_for_grpc

pytestmark = pytest.mark.process
INFER = "/inference.GRPCInferenceService/ModelInfer"


@pytest.fixture
def config(tmp_path: Path, _xgb_models: dict[str, bytes]) -> Path:
    return layout(tmp_path / "models", _xgb_models)


def _request() -> bytes:
    request = pb.ModelInferRequest(model_name="xgb", id="in-flight")
    request.inputs.add(name="x", datatype="FP32", shape=ROWS.shape)
    request.raw_input_contents.append(ROWS.tobytes())
    return bytes(request.SerializeToString())


def _refused(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            GRPCInferenceServiceStub(channel).ServerLive(pb.ServerLiveRequest(), timeout=2)
        except grpc.RpcError as error:
            return bool(error.code() == grpc.StatusCode.UNAVAILABLE)
    return False


def test_sigterm_lets_a_call_in_flight_finish(tmp_path: Path, config: Path) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    with running_server(tmp_path, grpc_env(config, port)) as server:
        wait_for_grpc(address)
        release = threading.Event()

        def message() -> Iterator[bytes]:
            release.wait(60)  # the call is open; its message comes after SIGTERM
            yield _request()

        with grpc.insecure_channel(address) as channel:
            call = channel.stream_unary(INFER).future(message(), timeout=60)
            threading.Event().wait(1.0)
            server.process.terminate()
            for _ in range(150):  # new calls are refused once the workers stop taking them
                if _refused(address):
                    break
            else:
                raise AssertionError(f"gRPC still took new calls:\n{server.output()}")
            release.set()
            answer = pb.ModelInferResponse.FromString(call.result(timeout=30))
        assert (answer.id, answer.model_version) == ("in-flight", "2")
        assert np.frombuffer(answer.raw_output_contents[0], "<f4").shape == (9,)
        assert server.wait() == 0


def test_a_grpc_port_in_use_stops_the_server(tmp_path: Path, config: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = server_env(free_port(), grpc_env(config, port))
        done = subprocess.run(
            [str(SMSERVE), "serve"], env=env, capture_output=True, text=True, timeout=120
        )
    assert done.returncode != 0
    assert f"the gRPC server could not listen on 127.0.0.1:{port}" in done.stdout + done.stderr


def test_a_call_before_the_models_are_loaded_is_unavailable(tmp_path: Path, config: Path) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    env = server_env(free_port(), grpc_env(config, port))
    with (tmp_path / "log").open("wb") as log:
        process = subprocess.Popen([str(SMSERVE), "serve"], env=env, stdout=log, stderr=log)
    try:
        with grpc.insecure_channel(address) as channel:
            stub = GRPCInferenceServiceStub(channel)
            error = rpc_error(lambda: stub.ModelInfer(pb.ModelInferRequest(), timeout=5))
            assert error.code() == grpc.StatusCode.UNAVAILABLE
        wait_for_grpc(address)
    finally:
        process.terminate()
        assert process.wait(timeout=60) == 0
