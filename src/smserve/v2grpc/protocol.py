"""The messages and the service of KServe's ``grpc_predict_v2.proto`` (package ``inference``),
built at import from a description written here, in a descriptor pool of their own.

Why not generated code: nothing generated is committed, and neither the image nor a test run
needs protoc. Why a private pool: tritonclient registers the same ``inference.*`` names in
protobuf's default pool, and a second registration in one process fails.
``tests/v2grpc/test_protocol.py`` compares every message, field by field, with the compiled
``grpc_service.proto`` that tritonclient ships (Triton's, a superset of KServe's for these six
RPCs), so this description cannot drift from the protocol.

``InferParameter`` also has Triton's ``double_param`` and ``uint64_param`` (tritonclient sends
``priority`` as uint64); KServe's clients never send them, so the wire format is unchanged
for them. The repository RPCs of either proto are not served.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "inference"
SERVICE = f"{PACKAGE}.GRPCInferenceService"
_FIELD = descriptor_pb2.FieldDescriptorProto
_SCALARS: Mapping[str, int] = {
    "bool": _FIELD.TYPE_BOOL,
    "string": _FIELD.TYPE_STRING,
    "bytes": _FIELD.TYPE_BYTES,
    "int32": _FIELD.TYPE_INT32,
    "int64": _FIELD.TYPE_INT64,
    "uint32": _FIELD.TYPE_UINT32,
    "uint64": _FIELD.TYPE_UINT64,
    "float": _FIELD.TYPE_FLOAT,
    "double": _FIELD.TYPE_DOUBLE,
}
_PARAMETERS = "map<string, InferParameter> parameters"
# Each message's fields in order, numbered from 1 (as in the .proto); "A.B" is B nested in A.
_MESSAGES: Mapping[str, tuple[str, ...]] = {
    "ServerLiveRequest": (),
    "ServerLiveResponse": ("bool live",),
    "ServerReadyRequest": (),
    "ServerReadyResponse": ("bool ready",),
    "ModelReadyRequest": ("string name", "string version"),
    "ModelReadyResponse": ("bool ready",),
    "ServerMetadataRequest": (),
    "ServerMetadataResponse": ("string name", "string version", "repeated string extensions"),
    "ModelMetadataRequest": ("string name", "string version"),
    "ModelMetadataResponse": (
        "string name",
        "repeated string versions",
        "string platform",
        "repeated ModelMetadataResponse.TensorMetadata inputs",
        "repeated ModelMetadataResponse.TensorMetadata outputs",
    ),
    "ModelMetadataResponse.TensorMetadata": (
        "string name",
        "string datatype",
        "repeated int64 shape",
    ),
    "ModelInferRequest": (
        "string model_name",
        "string model_version",
        "string id",
        _PARAMETERS,
        "repeated ModelInferRequest.InferInputTensor inputs",
        "repeated ModelInferRequest.InferRequestedOutputTensor outputs",
        "repeated bytes raw_input_contents",
    ),
    "ModelInferRequest.InferInputTensor": (
        "string name",
        "string datatype",
        "repeated int64 shape",
        _PARAMETERS,
        "InferTensorContents contents",
    ),
    "ModelInferRequest.InferRequestedOutputTensor": ("string name", _PARAMETERS),
    "ModelInferResponse": (
        "string model_name",
        "string model_version",
        "string id",
        _PARAMETERS,
        "repeated ModelInferResponse.InferOutputTensor outputs",
        "repeated bytes raw_output_contents",
    ),
    "ModelInferResponse.InferOutputTensor": (
        "string name",
        "string datatype",
        "repeated int64 shape",
        _PARAMETERS,
        "InferTensorContents contents",
    ),
    "InferParameter": (
        "bool bool_param",
        "int64 int64_param",
        "string string_param",
        "double double_param",
        "uint64 uint64_param",
    ),
    "InferTensorContents": (
        "repeated bool bool_contents",
        "repeated int32 int_contents",
        "repeated int64 int64_contents",
        "repeated uint32 uint_contents",
        "repeated uint64 uint64_contents",
        "repeated float fp32_contents",
        "repeated double fp64_contents",
        "repeated bytes bytes_contents",
    ),
}
_ONEOFS: Mapping[str, str] = {"InferParameter": "parameter_choice"}  # every field is in it
# The served RPCs: name -> (request message, response message).
METHODS: Mapping[str, tuple[str, str]] = {
    "ServerLive": ("ServerLiveRequest", "ServerLiveResponse"),
    "ServerReady": ("ServerReadyRequest", "ServerReadyResponse"),
    "ModelReady": ("ModelReadyRequest", "ModelReadyResponse"),
    "ServerMetadata": ("ServerMetadataRequest", "ServerMetadataResponse"),
    "ModelMetadata": ("ModelMetadataRequest", "ModelMetadataResponse"),
    "ModelInfer": ("ModelInferRequest", "ModelInferResponse"),
}


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The whole file: every message and the service, as protoc would describe them."""
    file = descriptor_pb2.FileDescriptorProto(
        name="smserve/grpc_predict_v2.proto", package=PACKAGE, syntax="proto3"
    )
    built: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name, fields in _MESSAGES.items():
        parent, _, own = name.rpartition(".")
        holder = built[parent].nested_type if parent else file.message_type
        built[name] = _message(holder.add(name=own), name, fields)
    file.service.add(name=SERVICE.rpartition(".")[2]).method.extend(
        descriptor_pb2.MethodDescriptorProto(
            name=method, input_type=_full(request), output_type=_full(response)
        )
        for method, (request, response) in METHODS.items()
    )
    return file


def _message(
    message: descriptor_pb2.DescriptorProto, name: str, fields: tuple[str, ...]
) -> descriptor_pb2.DescriptorProto:
    oneof = _ONEOFS.get(name)
    if oneof is not None:
        message.oneof_decl.add(name=oneof)
    for number, spec in enumerate(fields, start=1):
        field = message.field.add(number=number, label=_FIELD.LABEL_OPTIONAL)
        _describe(message, name, field, spec)
        if oneof is not None:
            field.oneof_index = 0
    return message


def _describe(
    message: descriptor_pb2.DescriptorProto,
    path: str,
    field: descriptor_pb2.FieldDescriptorProto,
    spec: str,
) -> None:
    """Fill ``field`` of ``message`` (``path``: its dotted name) from ``spec``:
    ``[repeated] TYPE NAME`` or ``map<string, TYPE> NAME``."""
    *kind, field.name = spec.split(" ")
    if kind[0] == "repeated":
        field.label = _FIELD.LABEL_REPEATED
        kind = kind[1:]
    if kind[0] == "map<string,":
        field.label = _FIELD.LABEL_REPEATED
        entry = _map_entry(message, field.name, kind[1].rstrip(">"))
        kind = [f"{path}.{entry}"]
    _set_type(field, kind[0])


def _map_entry(message: descriptor_pb2.DescriptorProto, name: str, value: str) -> str:
    """The nested ``<Name>Entry`` message protoc writes for a ``map<string, value>`` field."""
    entry = message.nested_type.add(name="".join(p.title() for p in name.split("_")) + "Entry")
    entry.options.map_entry = True
    for number, spec in enumerate(("string key", f"{value} value"), start=1):
        field = entry.field.add(number=number, label=_FIELD.LABEL_OPTIONAL)
        kind, field.name = spec.split(" ")
        _set_type(field, kind)
    return entry.name


def _set_type(field: descriptor_pb2.FieldDescriptorProto, kind: str) -> None:
    if kind in _SCALARS:
        field.type = _SCALARS[kind]  # type: ignore[assignment]
    else:
        field.type = _FIELD.TYPE_MESSAGE
        field.type_name = _full(kind)


def _full(name: str) -> str:
    return f".{PACKAGE}.{name}"


def _message_classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file_descriptor().SerializeToString())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _MESSAGES
    }


MESSAGES: Mapping[str, Any] = _message_classes()
ModelInferRequest: Any = MESSAGES["ModelInferRequest"]
ModelInferResponse: Any = MESSAGES["ModelInferResponse"]
InferTensorContents: Any = MESSAGES["InferTensorContents"]
