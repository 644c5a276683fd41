"""The ``aialgs.data.Record`` protobuf schema, built in Python instead of by protoc.

The file descriptor is assembled from ``descriptor_pb2`` and added to a private descriptor
pool, so the classes never clash with another copy of the schema (the SageMaker SDK's
``record_pb2`` registers the same names in the default pool). Field numbers, labels and packed
options are the ones every SageMaker writer uses; the wire bytes are identical. It also holds
the few wire-format helpers (``varint``, ``entry_head``) that the vectorised reader and
writer use to predict protobuf's bytes.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

PACKAGE = "aialgs.data"

_F = descriptor_pb2.FieldDescriptorProto
_TENSOR_VALUE_TYPES = {
    "Float32Tensor": _F.TYPE_FLOAT,
    "Float64Tensor": _F.TYPE_DOUBLE,
    "Int32Tensor": _F.TYPE_INT32,
}
# Value's oneof members: (field name, number, message name); 4-6 and 8 are unused.
_VALUE_MEMBERS = (
    ("float32_tensor", 2, "Float32Tensor"),
    ("float64_tensor", 3, "Float64Tensor"),
    ("int32_tensor", 7, "Int32Tensor"),
    ("bytes", 9, "Bytes"),
)


def _field(name: str, number: int, kind: int, label: int = _F.LABEL_OPTIONAL, **extra: Any) -> _F:
    return _F(name=name, number=number, type=kind, label=label, **extra)  # type: ignore[arg-type]


def _packed(name: str, number: int, kind: int) -> _F:
    options = descriptor_pb2.FieldOptions(packed=True)
    return _field(name, number, kind, _F.LABEL_REPEATED, options=options)


def _tensor(name: str, value_type: int) -> descriptor_pb2.DescriptorProto:
    return descriptor_pb2.DescriptorProto(
        name=name,
        field=[
            _packed("values", 1, value_type),
            _packed("keys", 2, _F.TYPE_UINT64),
            _packed("shape", 3, _F.TYPE_UINT64),
        ],
    )


def _bytes_message() -> descriptor_pb2.DescriptorProto:
    return descriptor_pb2.DescriptorProto(
        name="Bytes",
        field=[
            _field("value", 1, _F.TYPE_BYTES, _F.LABEL_REPEATED),
            _field("content_type", 2, _F.TYPE_STRING),
        ],
    )


def _value_message() -> descriptor_pb2.DescriptorProto:
    members = [
        _field(name, number, _F.TYPE_MESSAGE, type_name=f".{PACKAGE}.{kind}", oneof_index=0)
        for name, number, kind in _VALUE_MEMBERS
    ]
    return descriptor_pb2.DescriptorProto(
        name="Value", field=members, oneof_decl=[descriptor_pb2.OneofDescriptorProto(name="value")]
    )


def _map_entry(name: str) -> descriptor_pb2.DescriptorProto:
    return descriptor_pb2.DescriptorProto(
        name=name,
        field=[
            _field("key", 1, _F.TYPE_STRING),
            _field("value", 2, _F.TYPE_MESSAGE, type_name=f".{PACKAGE}.Value"),
        ],
        options=descriptor_pb2.MessageOptions(map_entry=True),
    )


def _map_field(name: str, number: int, entry: str) -> _F:
    entry_type = f".{PACKAGE}.Record.{entry}"
    return _field(name, number, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, type_name=entry_type)


def _record_message() -> descriptor_pb2.DescriptorProto:
    return descriptor_pb2.DescriptorProto(
        name="Record",
        field=[
            _map_field("features", 1, "FeaturesEntry"),
            _map_field("label", 2, "LabelEntry"),
            _field("uid", 3, _F.TYPE_STRING),
            _field("metadata", 4, _F.TYPE_STRING),
            _field("configuration", 5, _F.TYPE_STRING),
        ],
        nested_type=[_map_entry("FeaturesEntry"), _map_entry("LabelEntry")],
    )


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The schema as a ``FileDescriptorProto`` (proto2, package ``aialgs.data``)."""
    tensors = [_tensor(name, kind) for name, kind in _TENSOR_VALUE_TYPES.items()]
    return descriptor_pb2.FileDescriptorProto(
        name="smserve/aialgs_data_record.proto",
        package=PACKAGE,
        syntax="proto2",
        message_type=[*tensors, _bytes_message(), _value_message(), _record_message()],
    )


def _message_classes() -> dict[str, type[Message]]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor())
    names = [*_TENSOR_VALUE_TYPES, "Bytes", "Value", "Record"]
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in names
    }


_CLASSES = _message_classes()
# Typed as Any: generated message classes have no static field attributes.
Float32Tensor: Any = _CLASSES["Float32Tensor"]
Float64Tensor: Any = _CLASSES["Float64Tensor"]
Int32Tensor: Any = _CLASSES["Int32Tensor"]
Bytes: Any = _CLASSES["Bytes"]
Value: Any = _CLASSES["Value"]
Record: Any = _CLASSES["Record"]

# Wire bytes for the hand-written fast paths (they must equal what protobuf writes).
FEATURES_TAG, LABEL_TAG = 0x0A, 0x12  # Record.features (field 1), Record.label (field 2)
TENSOR_TAGS = {"float32_tensor": 0x12, "float64_tensor": 0x1A}  # Value fields 2 and 3
_PACKED_VALUES_TAG = 0x0A  # *Tensor.values (field 1, packed)
_KEY_TAG, _VALUE_TAG = 0x0A, 0x12  # map entry key (field 1), value (field 2)


def varint(value: int) -> bytes:
    """``value`` (non-negative) as a protobuf base-128 varint."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _delimited(tag: int, body: bytes, tail_length: int) -> bytes:
    # A length-delimited field whose last tail_length bytes are written by the caller.
    return bytes([tag]) + varint(len(body) + tail_length) + body


def entry_head(map_tag: int, key: str, tensor: str, item_size: int, n: int) -> bytes:
    """The bytes of map entry ``key -> Value{tensor: values=[n packed items]}`` that precede
    the values; the values field is omitted when ``n`` is 0, as protobuf does."""
    size = item_size * n
    values = _delimited(_PACKED_VALUES_TAG, b"", size) if n else b""
    value = _delimited(TENSOR_TAGS[tensor], values, size)
    entry = _delimited(_KEY_TAG, key.encode("utf-8"), 0) + _delimited(_VALUE_TAG, value, size)
    return _delimited(map_tag, entry, size)
