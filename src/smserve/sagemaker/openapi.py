"""The SageMaker hosting door described in OpenAPI: ``/ping``, ``/invocations`` (and
``/endpoints/{name}/invocations``), ``/execution-parameters``, and on a multi-model endpoint
the ``/models`` routes (``sagemaker.mme``).

``/invocations`` takes every media type the codec registry decodes and answers in every one
it encodes (the caller passes both lists); errors are ``{"error", "message"}``
(``sagemaker.envelope``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smserve.errors import (
    Conflict,
    DecodeError,
    InsufficientStorage,
    InvalidInput,
    ModelNotFound,
    NotAcceptable,
    PredictionError,
    UnsupportedMediaType,
)
from smserve.media import CSV, JSON, JSONLINES, LIBSVM
from smserve.openapi import (
    Fragment,
    JsonObject,
    Operation,
    body_of,
    header_parameter,
    json_content,
    operation,
    path_parameter,
    query_parameter,
    ref,
    response,
)
from smserve.sagemaker.api import CUSTOM_ATTRIBUTES_HEADER, TARGET_HEADER

TAG = "sagemaker"
ERROR = "sagemaker.error"
PREDICTIONS = "sagemaker.predictions"
MODEL = "sagemaker.model"
_TEXT_FORMATS = frozenset({CSV, LIBSVM, JSONLINES})
_INVOCATION_ERRORS = (
    DecodeError,
    InvalidInput,
    UnsupportedMediaType,
    NotAcceptable,
    ModelNotFound,
    PredictionError,
)
_STRING = {"type": "string"}
_NAME = {"type": "string", "minLength": 1}


def fragment(
    decodable: Sequence[str], offers: Sequence[str], *, multi_model: bool, lines: bool
) -> Fragment:
    """The door's routes: ``decodable`` and ``offers`` are the registry's media types;
    ``lines`` (SAGEMAKER_BATCH) means JSON answers are one object per line."""
    invocations = _invocations(decodable, offers, lines, multi_model)
    paths = {
        "/ping": _get(Operation("ping", "Health check", {200: response("Ready; empty body")})),
        "/invocations": {"post": operation("post", invocations, ERROR, TAG)},
        "/endpoints/{name}/invocations": _endpoint_invocations(invocations),
        "/execution-parameters": _get(_execution_parameters()),
    }
    if multi_model:
        paths.update(_multi_model_paths(invocations))
    return Fragment(paths, _schemas())


def _get(spec: Operation) -> JsonObject:
    return {"get": operation("get", spec, ERROR, TAG)}


def _invocations(
    decodable: Sequence[str], offers: Sequence[str], lines: bool, multi_model: bool
) -> Operation:
    target = "required on a multi-model endpoint" if multi_model else "else the model served"
    headers = [
        header_parameter(TARGET_HEADER, _STRING, f"The model that answers ({target})"),
        header_parameter(
            CUSTOM_ATTRIBUTES_HEADER,
            _STRING,
            "``outputs=<key>,...`` selects the outputs of a model that has several",
        ),
    ]
    return Operation(
        "invocations",
        "Predict on a batch of records",
        {200: _predicted(offers, lines), 204: response("An empty body: nothing to predict")},
        _INVOCATION_ERRORS,
        headers,
        body_of({media: {"schema": _request_schema(media)} for media in decodable}, False),
        "The Accept header picks the answer's format (the default is SAGEMAKER_DEFAULT_"
        "INVOCATIONS_ACCEPT); the Content-Type the body's. An empty body is answered 204.",
    )


def _request_schema(media: str) -> JsonObject:
    if media == JSON:
        rows = {"type": "array", "items": {}}
        instances = {"type": "object", "properties": {"instances": rows}, "required": ["instances"]}
        return {"oneOf": [instances, rows]}
    if media in _TEXT_FORMATS:
        return dict(_STRING)
    return {"type": "string", "format": "binary"}


def _predicted(offers: Sequence[str], lines: bool) -> JsonObject:
    content = {media: {"schema": _response_schema(media, lines)} for media in offers}
    headers = {
        CUSTOM_ATTRIBUTES_HEADER: {
            "description": "``outputs=<key>,...``: the outputs the answer holds",
            "schema": _STRING,
        },
        "X-Model-Version": {"description": "The version that answered", "schema": _integer()},
    }
    return response("The predictions, in the negotiated format", content, headers=headers)


def _response_schema(media: str, lines: bool) -> JsonObject:
    if media == JSON and not lines:
        return ref(PREDICTIONS)
    if media == JSON or media in _TEXT_FORMATS:
        return dict(_STRING)
    return {"type": "string", "format": "binary"}


def _endpoint_invocations(invocations: Operation) -> JsonObject:
    name = path_parameter("name", _NAME, "The endpoint's name (not used to pick the model)")
    spec = Operation(
        "endpoint_invocations",
        "Predict, as /invocations (the path SageMaker's inference components use)",
        invocations.ok,
        invocations.errors,
        [name, *invocations.parameters],
        invocations.request_body,
    )
    return {"post": operation("post", spec, ERROR, TAG)}


def _execution_parameters() -> Operation:
    ok = response("What Batch Transform should send", json_content(_execution_schema()))
    return Operation("execution_parameters", "Batch Transform's settings", {200: ok})


def _execution_schema() -> JsonObject:
    return _object(
        {
            "MaxConcurrentTransforms": _integer(1),
            "BatchStrategy": {"enum": ["MULTI_RECORD", "SINGLE_RECORD"]},
            "MaxPayloadInMB": _integer(1),
        }
    )


def _multi_model_paths(invocations: Operation) -> dict[str, JsonObject]:
    name = path_parameter("name", _NAME, "The model's name, as it was registered")
    model = {"parameters": [name]}
    return {
        "/models": {
            "get": operation("get", _list_models(), ERROR, TAG),
            "post": operation("post", _load_model(), ERROR, TAG),
        },
        "/models/{name}": {
            **model,
            "get": operation("get", _describe_model(), ERROR, TAG),
            "delete": operation("delete", _unload_model(), ERROR, TAG),
        },
        "/models/{name}/invoke": {
            **model,
            "post": operation("post", _invoke(invocations), ERROR, TAG),
        },
    }


def _list_models() -> Operation:
    parameters = [
        query_parameter("next_page_token", _STRING, "The last name of the previous page"),
        query_parameter("max_results", _integer(1), "At most this many models"),
    ]
    page = _object(
        {"models": {"type": "array", "items": ref(MODEL)}, "nextPageToken": _STRING},
        required=("models",),
    )
    ok = {200: response("Registered models, sorted by name", json_content(page))}
    return Operation("list_models", "List the registered models", ok, (InvalidInput,), parameters)


def _load_model() -> Operation:
    request = _object({"model_name": _NAME, "url": _NAME})
    loaded = _object({"status": _STRING, "modelName": _STRING, "modelUrl": _STRING})
    return Operation(
        "load_model",
        "Register and load a model",
        {200: response("Loaded", json_content(loaded))},
        (InvalidInput, Conflict, InsufficientStorage),
        request_body=body_of(json_content(request)),
    )


def _describe_model() -> Operation:
    ok = {200: response("The model", json_content(ref(MODEL)))}
    errors = (InvalidInput, ModelNotFound)  # InvalidInput: a name outside the naming rule
    return Operation("describe_model", "Describe a registered model", ok, errors)


def _unload_model() -> Operation:
    ok = {200: response("Unregistered", json_content(_object({"status": _STRING})))}
    errors = (InvalidInput, ModelNotFound)  # InvalidInput: a name outside the naming rule
    return Operation("unload_model", "Unregister a model", ok, errors)


def _invoke(invocations: Operation) -> Operation:
    headers = [p for p in invocations.parameters if p["name"] != TARGET_HEADER]
    return Operation(
        "invoke_model",
        "Predict with this model, as /invocations",
        invocations.ok,
        invocations.errors,
        headers,
        invocations.request_body,
    )


def _schemas() -> dict[str, JsonObject]:
    value = {"type": ["number", "array", "null"]}
    prediction = {"type": "object", "additionalProperties": value}
    return {
        ERROR: _object({"error": _STRING, "message": _STRING}),
        PREDICTIONS: _object({"predictions": {"type": "array", "items": prediction}}),
        MODEL: _object({"modelName": _STRING, "modelUrl": _STRING}),
    }


def _object(properties: dict[str, Any], required: Sequence[str] | None = None) -> JsonObject:
    """A closed object; every property is required unless ``required`` names a subset."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties if required is None else required),
        "additionalProperties": False,
    }


def _integer(minimum: int | None = None) -> JsonObject:
    return {"type": "integer"} if minimum is None else {"type": "integer", "minimum": minimum}
