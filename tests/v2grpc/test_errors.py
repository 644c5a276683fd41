"""Every failure is a gRPC status with the REST door's message: INVALID_ARGUMENT for a
malformed request (bad protobuf bytes included), NOT_FOUND in Triton's words,
RESOURCE_EXHAUSTED over the payload limit, UNAVAILABLE for a model that is not ready."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

from smserve.errors import ModelNotReady
from smserve.repository.modes import Models
from smserve.repository.status import VersionStatus
from smserve.v2.infer import Served
from tests.v2.conftest import Call
from tests.v2grpc.conftest import ROWS, Start, raw_request, rpc_error

INFER = "/inference.GRPCInferenceService/ModelInfer"


def _typed(datatype: str, field: str, values: list[Any], shape: Sequence[int] = (1, 4)) -> Any:
    request = pb.ModelInferRequest(model_name="xgb")
    tensor = request.inputs.add(name="x", datatype=datatype, shape=shape)
    getattr(tensor.contents, field).extend(values)
    return request


def _two_inputs() -> Any:
    request = raw_request("xgb", ROWS)
    request.inputs.add(name="y", datatype="FP32", shape=[3, 4])
    request.raw_input_contents.append(ROWS.tobytes())
    return request


def _raw_and_typed() -> Any:
    request = raw_request("xgb", ROWS)
    request.inputs[0].contents.fp32_contents.append(1.0)
    return request


def _short_raw() -> Any:
    request = raw_request("xgb", ROWS)
    request.raw_input_contents[0] = ROWS.tobytes()[:-4]
    return request


INVALID = [
    (raw_request("xgb", ROWS[:, :2].copy()), "has shape [3, 2], but the model takes [-1, 4]"),
    (_typed("FP16", "fp32_contents", [1.0] * 4), "datatype FP16 is not accepted: send FP32"),
    (_typed("BYTES", "bytes_contents", [b"1"] * 4), "BYTES is not accepted"),
    (_typed("FP8", "fp32_contents", [1.0] * 4), "unknown datatype 'FP8'; use one of BOOL"),
    (_typed("FP32", "fp64_contents", [1.0] * 4), "is FP32: its values go in contents.fp32"),
    (_typed("INT8", "int_contents", [1, 2, 3, 300]), "300 is out of range for INT8"),
    (_typed("FP32", "fp32_contents", [1.0] * 3), "shape [1, 4] holds 4 values, but 'data' has 3"),
    (_typed("FP32", "fp32_contents", [1, 2, float("inf"), 4]), "row 0, column 2"),
    (_typed("FP32", "fp32_contents", [1.0] * 4, shape=[-1, 4]), "non-negative integers"),
    (_two_inputs(), "the request has 2 inputs, but the model takes one"),
    (_raw_and_typed(), "has both contents and raw_input_contents[0]"),
    (_short_raw(), "raw_input_contents[0] is 44 bytes, but shape [3, 4] of FP32 takes 48"),
    (raw_request("xgb", ROWS, "predict", "predict"), "names an output twice"),
    (raw_request("xgb", ROWS, "nope"), "unknown output 'nope': this model's outputs are"),
    (raw_request("xgb", ROWS, model_version="v1"), "model version 'v1' is not a number"),
    (
        raw_request(
            "xgb", ROWS, parameters={"binary_data_output": pb.InferParameter(int64_param=1)}
        ),
        "parameter 'binary_data_output' of the request must be true or false",
    ),
]


@pytest.mark.parametrize(("request_message", "message"), INVALID)
def test_invalid_requests(
    stub: GRPCInferenceServiceStub, request_message: Any, message: str
) -> None:
    error = rpc_error(lambda: stub.ModelInfer(request_message))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in error.details()


def test_the_message_is_the_rest_doors(stub: GRPCInferenceServiceStub, call: Call) -> None:
    tensor = {"name": "input__0", "shape": [3, 2], "datatype": "FP32", "data": [0] * 6}
    rest = call("POST", "/v2/models/xgb/infer", {"inputs": [tensor]})
    error = rpc_error(lambda: stub.ModelInfer(raw_request("xgb", ROWS[:, :2].copy())))
    assert error.details() == rest.error


@pytest.mark.parametrize(
    ("model", "version", "message"),
    [
        ("nope", "", "Request for unknown model: 'nope' is not found"),
        ("xgb", "3", "Request for unknown model: 'xgb' version 3 is not found"),
    ],
)
def test_unknown_models_and_versions(
    stub: GRPCInferenceServiceStub, model: str, version: str, message: str
) -> None:
    for rpc in (
        lambda: stub.ModelInfer(raw_request(model, ROWS, model_version=version)),
        lambda: stub.ModelMetadata(pb.ModelMetadataRequest(name=model, version=version)),
    ):
        error = rpc_error(rpc)
        assert (error.code(), error.details()) == (grpc.StatusCode.NOT_FOUND, message)


@pytest.mark.parametrize(
    "data", [b"\xff\xff\xff\xff", b"\x0a\x05ab", b"\x2a\x03\xc3\x28\x00", bytes(range(256))]
)
def test_bytes_that_are_not_the_message_are_invalid_argument(
    start_server: Start, models: Models, data: bytes
) -> None:
    with grpc.insecure_channel(start_server(models)) as channel:
        infer = channel.unary_unary(INFER)  # bytes in, bytes out
        error = rpc_error(lambda: infer(data))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "the request is not a valid ModelInferRequest message" in error.details()
        ok = infer(raw_request("xgb", ROWS).SerializeToString())  # and the server goes on
        assert pb.ModelInferResponse.FromString(ok).model_name == "xgb"


def test_a_message_over_the_payload_limit_is_resource_exhausted(
    start_server: Start, models: Models
) -> None:
    limit = 64 * 1024
    with grpc.insecure_channel(start_server(models, max_payload_bytes=limit)) as channel:
        stub = GRPCInferenceServiceStub(channel)
        rows = np.zeros((limit // 16, 4), np.float32)  # exactly the limit of raw bytes
        error = rpc_error(lambda: stub.ModelInfer(raw_request("xgb", rows)))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        fits = stub.ModelInfer(raw_request("xgb", rows[:-8]))
        assert list(fits.outputs[0].shape) == [rows.shape[0] - 8, 3]


class _Loading:
    """A repository whose model ``m`` is still loading (as a multi-model entry that failed
    in this worker answers)."""

    def names(self) -> tuple[str, ...]:
        return ("m",)

    def resolve(self, name: str, version: int | None = None) -> Served:
        raise ModelNotReady("model m is loading; retry shortly")

    def statuses(self, name: str) -> list[VersionStatus]:
        return []


def test_a_model_that_is_not_ready_is_unavailable(start_server: Start) -> None:
    with grpc.insecure_channel(start_server(_Loading())) as channel:
        stub = GRPCInferenceServiceStub(channel)
        error = rpc_error(lambda: stub.ModelInfer(raw_request("m", ROWS)))
        assert (error.code(), error.details()) == (
            grpc.StatusCode.UNAVAILABLE,
            "model m is loading; retry shortly",
        )
        assert not stub.ServerReady(pb.ServerReadyRequest()).ready
        assert not stub.ModelReady(pb.ModelReadyRequest(name="m")).ready
