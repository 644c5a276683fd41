"""TF Serving's ``ModelServerConfig``, the part smserve reads, as a protobuf schema built in
Python (the way ``smserve.codecs.recordio.schema`` builds the RecordIO one), in a private
descriptor pool; parsed by protobuf's own ``text_format``, which brings typed fields, the
``[...]`` list syntax and errors located by line and column.

The messages and field numbers are TF Serving's (``model_server_config.proto``,
``file_system_storage_path_source.proto``, ``logging_config.proto``), with one leniency:
``model_config_list`` may appear more than once (its configs are joined). Fields TF Serving
has and smserve does not read are left out, so ``text_format`` refuses them by name.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.message import Message

PACKAGE = "tensorflow.serving"

_F = descriptor_pb2.FieldDescriptorProto
_D = descriptor_pb2.DescriptorProto
_REPEATED = _F.LABEL_REPEATED


def _field(name: str, number: int, kind: int, label: int = _F.LABEL_OPTIONAL, **extra: Any) -> _F:
    return _F(name=name, number=number, type=kind, label=label, **extra)  # type: ignore[arg-type]


def _message(name: str, number: int, type_name: str, label: int = _F.LABEL_OPTIONAL) -> _F:
    return _field(name, number, _F.TYPE_MESSAGE, label, type_name=f".{PACKAGE}.{type_name}")


def _policy() -> _D:
    """FileSystemStoragePathSourceConfig.ServableVersionPolicy, its oneof ``policy_choice``."""
    prefix = "ServableVersionPolicy."
    members = [_message(name, number, prefix + kind) for name, number, kind in _POLICY_MEMBERS]
    for member in members:
        member.oneof_index = 0
    return _D(
        name="ServableVersionPolicy",
        field=members,
        nested_type=[
            _D(name="Latest", field=[_field("num_versions", 1, _F.TYPE_UINT32)]),
            _D(name="All"),
            _D(name="Specific", field=[_field("versions", 1, _F.TYPE_INT64, _REPEATED)]),
        ],
        oneof_decl=[descriptor_pb2.OneofDescriptorProto(name="policy_choice")],
    )


_POLICY_MEMBERS = (("latest", 100, "Latest"), ("all", 101, "All"), ("specific", 102, "Specific"))


def _logging() -> list[_D]:
    """LoggingConfig and its parts: read so that a config may carry it (it is ignored)."""
    collector = _D(
        name="LogCollectorConfig",
        field=[_field("type", 1, _F.TYPE_STRING), _field("filename_prefix", 2, _F.TYPE_STRING)],
    )
    sampling = _D(name="SamplingConfig", field=[_field("sampling_rate", 1, _F.TYPE_DOUBLE)])
    logging = _D(
        name="LoggingConfig",
        field=[
            _message("log_collector_config", 1, "LogCollectorConfig"),
            _message("sampling_config", 2, "SamplingConfig"),
        ],
    )
    return [collector, sampling, logging]


def _model_config() -> _D:
    labels = _D(
        name="VersionLabelsEntry",
        field=[_field("key", 1, _F.TYPE_STRING), _field("value", 2, _F.TYPE_INT64)],
        options=descriptor_pb2.MessageOptions(map_entry=True),
    )
    return _D(
        name="ModelConfig",
        field=[
            _field("name", 1, _F.TYPE_STRING),
            _field("base_path", 2, _F.TYPE_STRING),
            _field("model_platform", 4, _F.TYPE_STRING),
            _message("model_version_policy", 7, "ServableVersionPolicy"),
            _message("version_labels", 8, "ModelConfig.VersionLabelsEntry", _REPEATED),
            _message("logging_config", 6, "LoggingConfig"),
        ],
        nested_type=[labels],
    )


def _file() -> descriptor_pb2.FileDescriptorProto:
    config_list = _D(
        name="ModelConfigList", field=[_message("config", 1, "ModelConfig", _REPEATED)]
    )
    server = _D(
        name="ModelServerConfig",
        field=[_message("model_config_list", 1, "ModelConfigList", _REPEATED)],
    )
    return descriptor_pb2.FileDescriptorProto(
        name="smserve/tensorflow_serving_model_server_config.proto",
        package=PACKAGE,
        syntax="proto3",
        message_type=[_policy(), *_logging(), _model_config(), config_list, server],
    )


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
ModelServerConfig: type[Message] = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName(f"{PACKAGE}.ModelServerConfig")
)


def parse(text: str) -> Any:
    """The ModelServerConfig ``text`` holds (typed Any: the class is built at run time, with
    no stubs); ``text_format.ParseError`` (with its line and column) when it is not one."""
    return text_format.Parse(text, ModelServerConfig(), descriptor_pool=_POOL)


def field_names(type_name: str) -> list[str]:
    """The fields of the message ``type_name`` (its full name), for a message."""
    return [field.name for field in _POOL.FindMessageTypeByName(type_name).fields]
