"""The messages built from smserve's own description are, field by field, those of the
compiled proto tritonclient ships (Triton's ``grpc_service.proto``: KServe's messages plus
InferParameter's double and uint64 kinds), and live in a pool of their own, beside
tritonclient's, in one process."""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from tritonclient.grpc import service_pb2

from smserve.v2grpc import protocol


def _canonical(message: descriptor_pb2.DescriptorProto) -> descriptor_pb2.DescriptorProto:
    """``message`` with nested types in name order (their order means nothing on the wire)."""
    copy = descriptor_pb2.DescriptorProto()
    copy.CopyFrom(message)
    nested = sorted((_canonical(n) for n in copy.nested_type), key=lambda n: n.name)
    del copy.nested_type[:]
    copy.nested_type.extend(nested)
    return copy


def _triton() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto()
    service_pb2.DESCRIPTOR.CopyToProto(file)
    return file


def test_every_message_is_tritons_field_by_field() -> None:
    theirs = {m.name: _canonical(m) for m in _triton().message_type}
    ours = protocol.file_descriptor()
    assert (ours.package, ours.syntax) == ("inference", "proto3")
    assert len(ours.message_type) == 14
    for message in ours.message_type:
        assert _canonical(message) == theirs[message.name], message.name


def test_the_six_methods_are_tritons() -> None:
    (theirs,) = _triton().service
    (ours,) = protocol.file_descriptor().service
    assert ours.name == theirs.name == "GRPCInferenceService"
    triton = {m.name: (m.input_type, m.output_type) for m in theirs.method}
    assert {m.name: (m.input_type, m.output_type) for m in ours.method} == {
        name: triton[name] for name in protocol.METHODS
    }


def test_a_private_pool_beside_tritonclients() -> None:
    ours = protocol.ModelInferRequest
    assert ours is not service_pb2.ModelInferRequest
    assert ours.DESCRIPTOR.full_name == service_pb2.ModelInferRequest.DESCRIPTOR.full_name
    sent = service_pb2.ModelInferRequest(model_name="m", raw_input_contents=[b"\x00" * 4])
    assert ours.FromString(sent.SerializeToString()).raw_input_contents == [b"\x00" * 4]
