"""TF Serving's REST API described in OpenAPI: every form of ``tfserving.routes``'s grammar.

Each of a model's three forms (``/v1/models/{model}``, ``.../versions/{version}``,
``.../labels/{label}``) answers GET (status), GET ``/metadata``, POST ``:predict``,
``:classify`` and ``:regress``, and OPTIONS (the CORS preflight). Every answer is
``application/json``; errors are ``{"error"}``. As TF Serving does, other methods and paths
under ``/v1/`` are ``400 Malformed request``, not 404 or 405."""

from __future__ import annotations

from collections.abc import Sequence

from smserve.errors import (
    DecodeError,
    InvalidInput,
    ModelNotFound,
    PredictionError,
    UnknownLabel,
)
from smserve.media import JSON
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
from smserve.repository.status import State
from smserve.tfserving.api import ORIGIN_PATTERN
from smserve.tfserving.routes import VERBS

TAG = "tfserving"
ERROR = "tfserving.error"
_SEGMENT = {"type": "string", "pattern": "^[^/:]+$"}  # one path segment, no ':' (the verb's)
_VERSION = {"type": "string", "pattern": "^[0-9]+$"}
_MODEL = path_parameter("model", _SEGMENT, "The model's name (percent-encoded)")
_FORMS: tuple[tuple[str, str, Sequence[JsonObject]], ...] = (
    ("", "", ()),
    (
        "/versions/{version}",
        "_version",
        (path_parameter("version", _VERSION, "A version number"),),
    ),
    ("/labels/{label}", "_label", (path_parameter("label", _SEGMENT, "A version label"),)),
)
ORIGIN = {"type": "string", "pattern": ORIGIN_PATTERN}
_LOOKUP_ERRORS = (InvalidInput, UnknownLabel, ModelNotFound)
_VERB_ERRORS = (*_LOOKUP_ERRORS, DecodeError, PredictionError)


def fragment() -> Fragment:
    paths: dict[str, JsonObject] = {}
    for form, suffix, parameters in _FORMS:
        base = f"/v1/models/{{model}}{form}"
        shared = {"parameters": [_MODEL, *parameters]}
        paths[base] = {**shared, **_model_status(suffix)}
        paths[f"{base}/metadata"] = {**shared, **_metadata(suffix)}
        for verb in VERBS:
            paths[f"{base}:{verb}"] = {**shared, **_verb(verb, suffix)}
    for item in paths.values():
        _any_path_for_preflight(item)
    return Fragment(paths, _schemas())


def _any_path_for_preflight(item: JsonObject) -> None:
    """The preflight answers any path under /v1/ without reading it (as TF Serving does), so
    its path parameters are any string: they override the path item's patterns."""
    preflight = item["options"]
    loose = [{**parameter, "schema": {"type": "string"}} for parameter in item["parameters"]]
    preflight["parameters"] = [*loose, *preflight.get("parameters", [])]


def _with_preflight(method: str, spec: Operation) -> JsonObject:
    return {method: operation(method, spec, ERROR, TAG), "options": _preflight(spec)}


def _preflight(spec: Operation) -> JsonObject:
    origin = {
        **header_parameter("Origin", ORIGIN, "The page's origin (http:// or https://...)"),
        "required": True,
    }
    allowed = response("Allowed; an empty body (labelled application/json)", {JSON: {}})
    preflight = Operation(
        f"{spec.operation_id}_preflight",
        "CORS preflight",
        {200: allowed},
        (InvalidInput,),
        [origin],
    )
    return operation("options", preflight, ERROR, TAG)


def _model_status(suffix: str) -> JsonObject:
    ok = {200: response("Every version's state", json_content(ref("tfserving.status")))}
    spec = Operation(f"tfserving_status{suffix}", "Model status", ok, _LOOKUP_ERRORS)
    return _with_preflight("get", spec)


def _metadata(suffix: str) -> JsonObject:
    ok = {200: response("Signatures", json_content(ref("tfserving.metadata")))}
    spec = Operation(f"tfserving_metadata{suffix}", "Model metadata", ok, _LOOKUP_ERRORS)
    return _with_preflight("get", spec)


def _verb(verb: str, suffix: str) -> JsonObject:
    schemas = {"predict": "predict", "classify": "examples", "regress": "examples"}
    request = body_of(json_content(ref(f"tfserving.{schemas[verb]}_request")))
    ok = {200: response("The answer", json_content(ref(f"tfserving.{verb}_response")))}
    spec = Operation(
        f"tfserving_{verb}{suffix}",
        verb.capitalize(),
        ok,
        _VERB_ERRORS,
        request_body=request,
        description="The body may be gzip-compressed (Content-Encoding: gzip).",
    )
    return _with_preflight("post", spec)


def _schemas() -> dict[str, JsonObject]:
    string: JsonObject = {"type": "string"}
    anything: JsonObject = {}
    return {
        ERROR: closed_object({"error": string}),
        "tfserving.predict_request": {
            "type": "object",
            "properties": {
                "signature_name": string,
                "instances": {"type": "array", "items": anything},
                "inputs": anything,
            },
            "oneOf": [{"required": ["instances"]}, {"required": ["inputs"]}],
        },
        "tfserving.predict_response": {
            "type": "object",
            "properties": {"predictions": {"type": "array"}, "outputs": anything},
            "oneOf": [{"required": ["predictions"]}, {"required": ["outputs"]}],
            "additionalProperties": False,
        },
        "tfserving.examples_request": {
            "type": "object",
            "properties": {
                "signature_name": string,
                "context": {"type": "object"},
                "examples": {"type": "array", "items": {"type": "object"}, "minItems": 1},
            },
            "required": ["examples"],
        },
        "tfserving.classify_response": _results(_class_scores()),
        "tfserving.regress_response": _results({"type": "number"}),
        "tfserving.status": closed_object({"model_version_status": array_of(_version_status())}),
        "tfserving.metadata": _metadata_schema(),
    }


def _class_scores() -> JsonObject:
    # ["label", score]; not prefixItems, which schemathesis 4 cannot read in a response
    pair = {"type": "array", "items": {"type": ["string", "number"]}, "minItems": 2, "maxItems": 2}
    return array_of(pair)


def _results(item: JsonObject) -> JsonObject:
    return closed_object({"results": array_of(item)})


def _version_status() -> JsonObject:
    status = closed_object({"error_code": {"type": "string"}, "error_message": {"type": "string"}})
    state = {"enum": [state.name for state in State]}
    return closed_object({"version": {"type": "string"}, "state": state, "status": status})


def _metadata_schema() -> JsonObject:
    string = {"type": "string"}
    spec = closed_object({"name": string, "signature_name": string, "version": string})
    signatures = closed_object({"signature_def": {"type": "object"}})
    metadata = {
        "type": "object",
        "properties": {"signature_def": signatures, "feature_names": array_of(string)},
        "required": ["signature_def"],
        "additionalProperties": False,
    }
    return closed_object({"model_spec": spec, "metadata": metadata})
