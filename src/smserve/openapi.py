"""OpenAPI 3.1: what every door's description is built from, and the assembler that joins them.

Each door describes its own routes in its own package (``sagemaker/openapi.py``,
``tfserving/openapi.py``, ``v2/openapi.py``) as a Fragment: path items and the component
schemas they refer to, named with the door's prefix (``v2.inference_request``). The HTTP
layer assembles the fragments of the doors it mounts, plus its own pages, into the document
served at ``GET /openapi.json``.

Nothing the code already knows is written twice: an operation names the error classes it
can end with and gets one response per status their ``status`` carries, in its door's
envelope; request and response media types of ``/invocations`` come from the codec registry;
what the HTTP adapter answers on every door route (503 before the models are loaded; 413 and
400 for a body it cannot take) is added here, once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from smserve.errors import InvalidInput, ModelNotReady, PayloadTooLarge, ServingError
from smserve.media import JSON

OPENAPI_VERSION = "3.1.0"
PATH = "/openapi.json"

JsonObject = dict[str, Any]
ErrorClasses = Sequence[type[ServingError]]

# What the HTTP adapter answers on every door route before the door sees the request
# (``http.dispatch``): 503 while this worker loads its models ...
ADAPTER_ERRORS: ErrorClasses = (ModelNotReady,)
# ... and for a request with a body: 413 over the payload limit, 400 when it cannot be read.
BODY_ERRORS: ErrorClasses = (PayloadTooLarge, InvalidInput)
_BODY_METHODS = frozenset({"post", "put", "patch"})


@dataclass(frozen=True, slots=True)
class Fragment:
    """One door's share of the document: ``paths`` (path -> path item) and the component
    ``schemas`` they refer to (names carry the door's prefix, so doors never collide)."""

    paths: Mapping[str, JsonObject]
    schemas: Mapping[str, JsonObject] = field(default_factory=dict)


def ref(name: str) -> JsonObject:
    """A reference to component schema ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


def closed_object(properties: JsonObject) -> JsonObject:
    """An object with exactly ``properties``, every one required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def array_of(items: JsonObject) -> JsonObject:
    return {"type": "array", "items": items}


def json_content(schema: JsonObject) -> JsonObject:
    return {JSON: {"schema": schema}}


def body_of(content: JsonObject, required: bool = True) -> JsonObject:
    """A request body with ``content`` (media type -> media type object)."""
    return {"required": required, "content": content}


def response(description: str, content: JsonObject | None = None, **extra: Any) -> JsonObject:
    """A response object; no ``content`` means an empty body without a Content-Type."""
    found: JsonObject = {"description": description}
    if content is not None:
        found["content"] = content
    return {**found, **extra}


def error_responses(errors: Iterable[type[ServingError]], envelope: str) -> JsonObject:
    """One response per status among ``errors``, each a JSON ``envelope`` (a schema name)."""
    statuses = sorted({error.status for error in errors})
    return {
        str(int(status)): response(HTTPStatus(status).phrase, json_content(ref(envelope)))
        for status in statuses
    }


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of a door: ``ok`` are its successful (or otherwise non-error) responses
    by status, ``errors`` the error classes it can end with, answered in ``envelope``."""

    operation_id: str
    summary: str
    ok: Mapping[int, JsonObject]
    errors: ErrorClasses = ()
    parameters: Sequence[JsonObject] = ()
    request_body: JsonObject | None = None
    description: str = ""


def operation(method: str, spec: Operation, envelope: str, tag: str) -> JsonObject:
    """The operation object for ``spec`` on ``method``, with the adapter's errors added."""
    errors = [*spec.errors, *ADAPTER_ERRORS]
    if method in _BODY_METHODS:
        errors.extend(BODY_ERRORS)
    responses = {**error_responses(errors, envelope), **_by_status(spec.ok)}
    found: JsonObject = {"operationId": spec.operation_id, "summary": spec.summary, "tags": [tag]}
    if spec.description:
        found["description"] = spec.description
    if spec.parameters:
        found["parameters"] = list(spec.parameters)
    if spec.request_body is not None:
        found["requestBody"] = spec.request_body
    found["responses"] = dict(sorted(responses.items()))
    return found


def _by_status(ok: Mapping[int, JsonObject]) -> JsonObject:
    return {str(status): value for status, value in ok.items()}


def path_parameter(name: str, schema: JsonObject, description: str) -> JsonObject:
    return _parameter("path", name, schema, description, required=True)


def header_parameter(name: str, schema: JsonObject, description: str) -> JsonObject:
    return _parameter("header", name, schema, description)


def query_parameter(name: str, schema: JsonObject, description: str) -> JsonObject:
    return _parameter("query", name, schema, description)


def _parameter(
    where: str, name: str, schema: JsonObject, description: str, required: bool = False
) -> JsonObject:
    spec = {"name": name, "in": where, "required": required, "schema": schema}
    return {**spec, "description": description}


def text_page(operation_id: str, summary: str, media_type: str) -> JsonObject:
    """A GET path item for a text page that needs no model (the metrics pages)."""
    content = {media_type: {"schema": {"type": "string"}}}
    spec = {"operationId": operation_id, "summary": summary, "tags": ["metrics"]}
    return {"get": {**spec, "responses": {"200": response("The page", content)}}}


def assemble(
    title: str, version: str, fragments: Iterable[Fragment], description: str = ""
) -> JsonObject:
    """The document: every fragment's paths and schemas, plus ``GET /openapi.json`` itself.
    Raises ValueError when two fragments claim the same path or schema name."""
    paths: JsonObject = {PATH: _self_description()}
    schemas: JsonObject = {}
    for fragment in fragments:
        _merge(paths, fragment.paths, "path")
        _merge(schemas, fragment.schemas, "schema")
    info = {"title": title, "version": version, "description": description}
    return {
        "openapi": OPENAPI_VERSION,
        "info": info,
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def _merge(into: JsonObject, new: Mapping[str, JsonObject], what: str) -> None:
    for key, value in new.items():
        if key in into:
            raise ValueError(f"two fragments describe the {what} {key!r}")
        into[key] = value


def _self_description() -> JsonObject:
    content = json_content({"type": "object", "required": ["openapi", "info", "paths"]})
    spec = {"operationId": "openapi", "summary": "This document", "tags": ["openapi"]}
    return {"get": {**spec, "responses": {"200": response("OpenAPI 3.1", content)}}}
