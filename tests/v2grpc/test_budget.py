"""The gRPC door charges a request's declared shape to the same per-request memory budget as
the REST door, before any array is made (a shape declared far past its contents is a 413's
PayloadTooLarge, RESOURCE_EXHAUSTED on the wire, never an allocation)."""

from __future__ import annotations

import pytest
from tritonclient.grpc import service_pb2 as pb

from smserve.budget import MemoryBudget
from smserve.errors import PayloadTooLarge
from smserve.repository.modes import Models
from smserve.v2grpc.api import GRPCInferenceAPI
from tests.v2.conftest import models  # noqa: F401  # the V2 tests' models


def _declaring(shape: list[int]) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="xgb")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=shape)
    tensor.contents.fp32_contents.extend([1.0, 2.0, 3.0, 4.0])
    return request


def test_a_declared_shape_over_the_budget_is_refused_before_any_array(
    models: Models,  # noqa: F811  # the fixture imported above
) -> None:
    api = GRPCInferenceAPI(models, MemoryBudget(cap_bytes=1 << 20))
    with pytest.raises(PayloadTooLarge, match=r"shape \[1000000, 4\] needs 64000000 bytes"):
        api.model_infer(_declaring([1_000_000, 4]))


def test_a_request_within_the_budget_is_answered(
    models: Models,  # noqa: F811
) -> None:
    api = GRPCInferenceAPI(models, MemoryBudget(cap_bytes=1 << 20))
    answer = api.model_infer(_declaring([1, 4]))
    assert answer.model_name == "xgb"
    assert list(answer.outputs[0].shape)[0] == 1
