"""Every gRPC call is counted in the server's metrics beside the REST doors' requests: door
``v2grpc``, the model it named (empty for a 404), the HTTP status REST gives the same
outcome, its payload bytes and its latency."""

from __future__ import annotations

import grpc
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

from smserve.metrics import Metrics, page
from smserve.v2.infer import ModelSource
from tests.v2grpc.conftest import ROWS, Start, raw_request


def test_calls_are_counted_by_model_status_bytes_and_latency(
    start_server: Start, models: ModelSource
) -> None:
    metrics = Metrics(None)
    with grpc.insecure_channel(start_server(models, metrics)) as channel:
        stub = GRPCInferenceServiceStub(channel)
        request = raw_request("xgb", ROWS)
        answers = [stub.ModelInfer(request) for _ in range(3)]
        stub.ServerLive(pb.ServerLiveRequest())
        for failing, code in (
            (raw_request("absent", ROWS), grpc.StatusCode.NOT_FOUND),
            (raw_request("xgb", ROWS[:, :2]), grpc.StatusCode.INVALID_ARGUMENT),
        ):
            with pytest.raises(grpc.RpcError) as failed:
                stub.ModelInfer(failing)
            assert failed.value.code() == code
    requests = metrics.serving.requests
    size_in, size_out = len(request.SerializeToString()), len(answers[0].SerializeToString())
    assert requests[("v2grpc", "xgb", "", 200)] == [3, 3 * size_in, 3 * size_out]
    assert requests[("v2grpc", "", "", 200)][0] == 1  # ServerLive names no model
    assert requests[("v2grpc", "", "", 404)][0] == 1  # the name asked for is not a label
    assert requests[("v2grpc", "xgb", "", 400)][0] == 1
    assert metrics.serving.in_flight == 0
    assert metrics.serving.duration[("v2grpc", "xgb")].to_json()[1] > 0  # seconds observed
    text = page.render(metrics.all_counts(), {})
    expected = 'smserve_requests_total{door="v2grpc",model="xgb",format="",status="200"} 3'
    assert expected in text
    assert 'smserve_request_duration_seconds_count{door="v2grpc",model="xgb"} 3' in text
