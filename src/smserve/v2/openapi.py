"""The Open Inference Protocol's REST API (KServe V2) described in OpenAPI: every form of
``v2.routes``'s grammar, with Triton's binary tensor data extension.

The shapes are those of KServe's ``rest_predict_v2.yaml`` (a test compares them), narrowed
to what this server takes: one input tensor, the datatypes ``v2.datatypes`` accepts,
``parameters`` whose values are strings, numbers or booleans. An input or output sent as
binary carries ``parameters.binary_data_size`` instead of ``data``; the body is then the
JSON followed by the tensors' bytes, and ``Inference-Header-Content-Length`` gives the
JSON's size, in the request and in the answer (``application/octet-stream``). Errors are
``{"error"}``; a known path with another method is 405 with ``Allow``."""

from __future__ import annotations

from collections.abc import Sequence

from smserve.errors import (
    DecodeError,
    InvalidInput,
    ModelNotFound,
    PredictionError,
    UnsupportedMediaType,
)
from smserve.media import OCTET_STREAM
from smserve.openapi import (
    Fragment,
    JsonObject,
    Operation,
    array_of,
    body_of,
    closed_object,
    header_parameter,
    json_content,
    operation,
    path_parameter,
    ref,
    response,
)
from smserve.v2.datatypes import DTYPES
from smserve.v2.request import HEADER_LENGTH

TAG = "v2"
ERROR = "v2.error_response"
_STRING = {"type": "string"}
_NAME = path_parameter("model_name", {"type": "string", "pattern": "^[^/]+$"}, "The model")
_VERSION = path_parameter(
    "model_version", {"type": "string", "pattern": "^[0-9]+$"}, "A version (else the newest)"
)
_FORMS: tuple[tuple[str, str, Sequence[JsonObject]], ...] = (
    ("", "", (_NAME,)),
    ("/versions/{model_version}", "_version", (_NAME, _VERSION)),
)
_LOOKUP_ERRORS = (InvalidInput, ModelNotFound)
_INFER_ERRORS = (*_LOOKUP_ERRORS, DecodeError, UnsupportedMediaType, PredictionError)
_HEADER_LENGTH_SCHEMA = {"type": "integer", "minimum": 0}
_TENSOR = ("name", "shape", "datatype")  # what every tensor has; data, unless binary


def fragment() -> Fragment:
    metadata = _server_metadata()
    paths: dict[str, JsonObject] = {
        "/v2": _get(metadata),
        "/v2/": _get(_renamed(metadata, "v2_server_metadata_slash")),
        "/v2/health/live": _get(_live()),
        "/v2/health/ready": _get(_ready()),
    }
    for form, suffix, parameters in _FORMS:
        base = f"/v2/models/{{model_name}}{form}"
        shared = {"parameters": list(parameters)}
        paths[base] = {**shared, **_get(_model_metadata(suffix))}
        paths[f"{base}/ready"] = {**shared, **_get(_model_ready(suffix))}
        paths[f"{base}/infer"] = {**shared, "post": operation("post", _infer(suffix), ERROR, TAG)}
    return Fragment(paths, _schemas())


def _get(spec: Operation) -> JsonObject:
    return {"get": operation("get", spec, ERROR, TAG)}


def _renamed(spec: Operation, operation_id: str) -> Operation:
    return Operation(operation_id, spec.summary, spec.ok, spec.errors)


def _server_metadata() -> Operation:
    ok = {200: response("The server", json_content(ref("v2.metadata_server_response")))}
    return Operation("v2_server_metadata", "Server metadata", ok)


def _live() -> Operation:
    ok = {200: response("Live", json_content(_flag("live")))}
    return Operation("v2_live", "Server live", ok)


def _ready() -> Operation:
    ok = {
        200: response("Every model is ready", json_content(_flag("ready"))),
        400: response("Some model is not ready", json_content(_flag("ready"))),
    }
    return Operation("v2_ready", "Server ready", ok)


def _model_metadata(suffix: str) -> Operation:
    ok = {200: response("The model", json_content(ref("v2.metadata_model_response")))}
    return Operation(f"v2_model_metadata{suffix}", "Model metadata", ok, _LOOKUP_ERRORS)


def _model_ready(suffix: str) -> Operation:
    ready = closed_object({"name": _STRING, "ready": {"type": "boolean"}})
    ok = {200: response("The model answers", json_content(ready))}
    return Operation(f"v2_model_ready{suffix}", "Model ready", ok, _LOOKUP_ERRORS)


def _infer(suffix: str) -> Operation:
    binary = {"type": "string", "format": "binary"}
    length = header_parameter(
        HEADER_LENGTH, _HEADER_LENGTH_SCHEMA, "The size of the JSON before binary tensors"
    )
    request = {**json_content(ref("v2.inference_request")), OCTET_STREAM: {"schema": binary}}
    answer = {**json_content(ref("v2.inference_response")), OCTET_STREAM: {"schema": binary}}
    header = {
        "description": "With binary outputs: the JSON's size",
        "schema": _HEADER_LENGTH_SCHEMA,
    }
    version = {"description": "The version that answered", "schema": {"type": "integer"}}
    headers = {HEADER_LENGTH: header, "X-Model-Version": version}
    return Operation(
        f"v2_infer{suffix}",
        "Inference",
        {200: response("The outputs", answer, headers=headers)},
        _INFER_ERRORS,
        [length],
        body_of(request),
        "The body may be compressed (Content-Encoding: gzip or deflate).",
    )


def _schemas() -> dict[str, JsonObject]:
    strings = {"type": "array", "items": _STRING}
    return {
        ERROR: closed_object({"error": _STRING}),
        "v2.parameters": {
            "type": "object",
            "additionalProperties": {"type": ["string", "number", "boolean"]},
        },
        "v2.tensor_data": {
            "type": "array",
            "items": {"anyOf": [ref("v2.tensor_data"), {"type": ["number", "string", "boolean"]}]},
        },
        "v2.metadata_server_response": closed_object(
            {"name": _STRING, "version": _STRING, "extensions": strings}
        ),
        "v2.metadata_tensor": closed_object(
            {"name": _STRING, "datatype": _STRING, "shape": _shape(-1)}
        ),
        "v2.metadata_model_response": closed_object(
            {
                "name": _STRING,
                "versions": strings,
                "platform": _STRING,
                "inputs": array_of(ref("v2.metadata_tensor")),
                "outputs": array_of(ref("v2.metadata_tensor")),
            }
        ),
        "v2.inference_request": _inference_request(),
        "v2.request_input": _tensor(_datatypes()),
        "v2.request_output": _open({"name": _STRING, "parameters": ref("v2.parameters")}, "name"),
        "v2.inference_response": _inference_response(),
        # in a JSON answer every output has data (binary ones come as application/octet-stream)
        "v2.response_output": {**_tensor(_datatypes()), "required": [*_TENSOR, "data"]},
    }


def _inference_request() -> JsonObject:
    inputs = {**array_of(ref("v2.request_input")), "minItems": 1, "maxItems": 1}
    properties = {
        "id": _STRING,
        "parameters": ref("v2.parameters"),
        "inputs": inputs,
        "outputs": array_of(ref("v2.request_output")),
    }
    return _open(properties, "inputs")


def _inference_response() -> JsonObject:
    properties = {
        "model_name": _STRING,
        "model_version": _STRING,
        "id": _STRING,
        "parameters": ref("v2.parameters"),
        "outputs": array_of(ref("v2.response_output")),
    }
    return _open(properties, "model_name", "outputs")


def _tensor(datatype: JsonObject) -> JsonObject:
    """An input or output tensor: ``data``, or binary (``parameters.binary_data_size``)."""
    properties = {
        "name": _STRING,
        "shape": _shape(0),
        "datatype": datatype,
        "parameters": ref("v2.parameters"),
        "data": ref("v2.tensor_data"),
    }
    return _open(properties, *_TENSOR)


def _datatypes() -> JsonObject:
    return {"type": "string", "enum": list(DTYPES)}


def _shape(minimum: int) -> JsonObject:
    return array_of({"type": "integer", "minimum": minimum})


def _flag(name: str) -> JsonObject:
    return closed_object({name: {"type": "boolean"}})


def _open(properties: JsonObject, *required: str) -> JsonObject:
    """An object whose unknown members are ignored, as the protocol's servers ignore them."""
    return {"type": "object", "properties": properties, "required": list(required)}
