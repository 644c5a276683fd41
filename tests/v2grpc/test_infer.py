"""ModelInfer through the gRPC door gives the REST door's numbers for every model, version,
datatype and output, raw or typed, and echoes the request id."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

from tests.v2.conftest import Call
from tests.v2grpc.conftest import ROWS, raw_outputs, raw_request

# datatype -> (typed field, numpy type of the values sent)
TYPED = {
    "BOOL": ("bool_contents", np.bool_),
    "INT8": ("int_contents", np.int8),
    "INT16": ("int_contents", np.int16),
    "INT32": ("int_contents", np.int32),
    "INT64": ("int64_contents", np.int64),
    "UINT8": ("uint_contents", np.uint8),
    "UINT16": ("uint_contents", np.uint16),
    "UINT32": ("uint_contents", np.uint32),
    "UINT64": ("uint64_contents", np.uint64),
    "FP32": ("fp32_contents", np.float32),
    "FP64": ("fp64_contents", np.float64),
}
WHOLE = np.array([[0, 1, 2, 3], [9, 10, 11, 12], [1, 0, 1, 1]])


def rest_outputs(call: Call, model: str, rows: np.ndarray, *names: str) -> dict[str, Any]:
    """The REST door's answer to the same request, as arrays."""
    tensor = {"name": "x", "shape": list(rows.shape), "datatype": "FP32", "data": rows.tolist()}
    body: dict[str, Any] = {"inputs": [tensor]}
    if names:
        body["outputs"] = [{"name": name} for name in names]
    answer = call("POST", f"/v2/models/{model}/infer", body)
    assert answer.status == 200, answer.reply.body
    document = answer.json("inference_response")
    return {o["name"]: np.reshape(o["data"], o["shape"]) for o in document["outputs"]}


def typed_request(model: str, datatype: str, rows: np.ndarray, **fields: Any) -> Any:
    request = pb.ModelInferRequest(model_name=model, **fields)
    tensor = request.inputs.add(name="x", datatype=datatype, shape=rows.shape)
    field, kind = TYPED[datatype]
    getattr(tensor.contents, field).extend(rows.astype(kind).ravel().tolist())
    return request


def typed_outputs(response: Any) -> dict[str, np.ndarray]:
    assert not response.raw_output_contents
    fields = {"FP32": "fp32_contents", "FP64": "fp64_contents", "INT64": "int64_contents"}
    return {
        o.name: np.reshape(getattr(o.contents, fields[o.datatype]), o.shape)
        for o in response.outputs
    }


@pytest.mark.parametrize(("model", "version"), [("xgb", ""), ("xgb", "1"), ("km", "1")])
def test_raw_request_gets_raw_default_outputs_equal_to_rest(
    stub: GRPCInferenceServiceStub, call: Call, model: str, version: str
) -> None:
    response = stub.ModelInfer(raw_request(model, ROWS, model_version=version, id="req-7"))
    assert (response.model_name, response.id) == (model, "req-7")
    assert response.model_version == (version or "2")
    path_model = f"{model}/versions/{version}" if version else model
    want = rest_outputs(call, path_model, ROWS)
    got = raw_outputs(response)
    assert list(got) == list(want)
    for name, values in want.items():
        np.testing.assert_array_equal(got[name], values.astype(got[name].dtype))


@pytest.mark.parametrize("datatype", list(TYPED))
def test_every_datatype_typed_gives_the_numbers_of_fp32(
    stub: GRPCInferenceServiceStub, datatype: str
) -> None:
    rows = WHOLE.astype(bool) if datatype == "BOOL" else WHOLE
    typed = stub.ModelInfer(typed_request("xgb", datatype, rows))
    raw = stub.ModelInfer(raw_request("xgb", rows.astype(np.float32)))
    assert [o.datatype for o in typed.outputs] == [o.datatype for o in raw.outputs]
    got, want = typed_outputs(typed), raw_outputs(raw)
    for name, values in want.items():
        np.testing.assert_array_equal(got[name], values)


def test_requested_and_explanation_outputs_in_order(
    stub: GRPCInferenceServiceStub, call: Call
) -> None:
    names = ("contributions", "predicted_label", "predict", "probabilities")
    response = stub.ModelInfer(raw_request("xgb", ROWS, *names))
    got = raw_outputs(response)
    assert list(got) == list(names)
    assert got["contributions"].shape == (3, 3, 5)  # rows, classes, features + bias
    want = rest_outputs(call, "xgb", ROWS, *names)
    for name in names:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6)


def test_typed_request_gets_typed_outputs_unless_it_asks_for_raw(
    stub: GRPCInferenceServiceStub,
) -> None:
    typed = stub.ModelInfer(typed_request("km", "FP32", ROWS))
    assert typed_outputs(typed)["closest_cluster"].tolist() == [0, 1, 0]
    raw_flag = pb.InferParameter(bool_param=True)
    asked = stub.ModelInfer(
        typed_request("km", "FP32", ROWS, parameters={"binary_data_output": raw_flag})
    )
    np.testing.assert_array_equal(
        raw_outputs(asked)["distance_to_cluster"], typed_outputs(typed)["distance_to_cluster"]
    )


def test_parameters_of_every_kind_are_accepted(stub: GRPCInferenceServiceStub) -> None:
    kinds = {
        "b": pb.InferParameter(bool_param=False),
        "i": pb.InferParameter(int64_param=-3),
        "s": pb.InferParameter(string_param="np"),
        "d": pb.InferParameter(double_param=0.5),
        "priority": pb.InferParameter(uint64_param=2),  # tritonclient's
        "unset": pb.InferParameter(),
    }
    request = raw_request("xgb", ROWS, "predict", parameters=kinds)
    for key, value in kinds.items():
        request.inputs[0].parameters[key].CopyFrom(value)
        request.outputs[0].parameters[key].CopyFrom(value)
    plain = stub.ModelInfer(raw_request("xgb", ROWS, "predict"))
    assert stub.ModelInfer(request).raw_output_contents == plain.raw_output_contents


def test_an_empty_batch_and_an_empty_id(stub: GRPCInferenceServiceStub) -> None:
    response = stub.ModelInfer(raw_request("xgb", np.zeros((0, 4), np.float32), "predict"))
    assert (response.id, list(response.outputs[0].shape)) == ("", [0, 3])
    assert response.raw_output_contents == [b""]
