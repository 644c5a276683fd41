"""ServerLive, ServerReady, ModelReady, ServerMetadata and ModelMetadata say what the REST
door says, as messages."""

from __future__ import annotations

import grpc
from google.protobuf import json_format
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

import smserve
from tests.v2.conftest import Call
from tests.v2grpc.conftest import rpc_error


def test_health(stub: GRPCInferenceServiceStub) -> None:
    assert stub.ServerLive(pb.ServerLiveRequest()).live
    assert stub.ServerReady(pb.ServerReadyRequest()).ready
    ready = [("xgb", ""), ("xgb", "1"), ("xgb", "2"), ("km", "")]
    for name, version in ready:
        assert stub.ModelReady(pb.ModelReadyRequest(name=name, version=version)).ready
    for name, version in (("xgb", "3"), ("nope", ""), ("", "")):
        assert not stub.ModelReady(pb.ModelReadyRequest(name=name, version=version)).ready


def test_server_metadata(stub: GRPCInferenceServiceStub, call: Call) -> None:
    metadata = stub.ServerMetadata(pb.ServerMetadataRequest())
    assert (metadata.name, metadata.version) == ("smserve", smserve.__version__)
    assert json_format.MessageToDict(metadata) == call("GET", "/v2").json(
        "metadata_server_response"
    )


def test_model_metadata_is_the_rest_doors(stub: GRPCInferenceServiceStub, call: Call) -> None:
    for name, version, path in (
        ("xgb", "", "xgb"),
        ("xgb", "1", "xgb/versions/1"),
        ("km", "", "km"),
    ):
        metadata = stub.ModelMetadata(pb.ModelMetadataRequest(name=name, version=version))
        as_dict = json_format.MessageToDict(metadata, preserving_proto_field_name=True)
        rest = call("GET", f"/v2/models/{path}").json("metadata_model_response")
        for tensor in (*as_dict["inputs"], *as_dict["outputs"]):
            tensor["shape"] = [int(d) for d in tensor["shape"]]  # int64 comes back as text
        assert as_dict == rest


def test_a_version_beyond_int64_is_invalid(stub: GRPCInferenceServiceStub) -> None:
    error = rpc_error(lambda: stub.ModelReady(pb.ModelReadyRequest(name="xgb", version="9" * 20)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "out of range" in error.details()
