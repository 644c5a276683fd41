"""The gRPC door in this process, over the models of the V2 tests (a TF Serving layout: ``km``
version 1, ``xgb`` versions 1 (binary:logistic) and 2 (multi:softprob)), called through the
stub tritonclient generates from Triton's proto: an implementation of the protocol that is
not ours. The REST door's ``call`` (tests/v2) answers from the same models, for comparisons.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

from smserve.config import Settings
from smserve.metrics import Metrics
from smserve.v2.infer import ModelSource
from smserve.v2grpc.api import GRPCInferenceAPI
from smserve.v2grpc.port import serving_on
from smserve.v2grpc.server import GrpcServer
from tests.process.servers import free_port
from tests.v2.conftest import api, call, models  # noqa: F401  # the REST door, same models

ROWS = np.array([[0, 0, 0, 0], [9, 9.5, 10, 11], [-1.5, 0.25, 2, -0.75]], dtype=np.float32)
Start = Callable[..., str]


@pytest.fixture
def start_server() -> Iterator[Start]:
    """Start a gRPC server over a ModelSource (counting in ``metrics``; settings as keyword
    arguments); its address."""
    servers: list[GrpcServer] = []

    def start(source: ModelSource, metrics: Metrics | None = None, **settings: Any) -> str:
        port = free_port()
        options = {"bind_host": "127.0.0.1", "graceful_timeout_s": 2}
        configured = serving_on(Settings(**{**options, **settings}), port)
        server = GrpcServer(GRPCInferenceAPI(source), configured, metrics)
        server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    yield start
    for server in servers:
        server.begin_stop()
        assert server.wait_stopped(10)


@pytest.fixture
def stub(
    start_server: Start,
    models: ModelSource,  # noqa: F811  # the fixture imported above
) -> Iterator[GRPCInferenceServiceStub]:
    with grpc.insecure_channel(start_server(models)) as channel:
        yield GRPCInferenceServiceStub(channel)


def raw_request(model: str, rows: np.ndarray, *outputs: str, **fields: Any) -> Any:
    """A ModelInferRequest with ``rows`` as raw bytes (what tritonclient sends)."""
    request = pb.ModelInferRequest(model_name=model, **fields)
    request.inputs.add(name="input__0", datatype="FP32", shape=rows.shape)
    request.raw_input_contents.append(rows.astype("<f4").tobytes())
    request.outputs.extend(pb.ModelInferRequest.InferRequestedOutputTensor(name=n) for n in outputs)
    return request


def raw_outputs(response: Any) -> dict[str, np.ndarray]:
    """Each raw output as an array of its datatype and shape."""
    dtypes = {"FP32": "<f4", "FP64": "<f8", "INT64": "<i8", "INT32": "<i4", "BOOL": "?"}
    assert not any(o.HasField("contents") for o in response.outputs)
    return {
        output.name: np.frombuffer(raw, dtypes[output.datatype]).reshape(output.shape)
        for output, raw in zip(response.outputs, response.raw_output_contents, strict=True)
    }


def rpc_error(invoke: Callable[[], Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        invoke()
    return caught.value
