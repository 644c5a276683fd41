"""The Open Inference Protocol (KServe V2) REST API without HTTP: a DoorRequest in, a
DoorReply out, for every model the repository serves.

Unknown model (or version): 404, worded as Triton words it. Every other failure is the
shared mapping (``failures.describe``) in the protocol's ``{"error": "..."}`` envelope. The
metrics count infer requests (verb ``infer``), failed ones included; metadata and health
requests are not counted (Kubernetes probes them every few seconds).
"""

from __future__ import annotations

from smserve.doors import DoorReply, DoorRequest
from smserve.errors import InvalidInput, ModelNotFound
from smserve.failures import describe
from smserve.media import JSON
from smserve.v2 import response
from smserve.v2.encoding import decoded_body
from smserve.v2.infer import (
    ModelSource,
    Served,
    available_versions,
    infer,
    model_metadata,
    not_found_message,
    server_metadata,
    server_ready,
)
from smserve.v2.request import HEADER_LENGTH, parse_request
from smserve.v2.routes import NOT_ALLOWED, NOT_FOUND, Route, parse_route

DEFAULT_MAX_BODY_BYTES = 6 * 1024 * 1024  # Settings.max_payload_bytes's default
_ROUTE_ERRORS = {NOT_FOUND: (404, "Not Found"), NOT_ALLOWED: (405, "Method Not Allowed")}


class V2API:
    """Answers every request under ``/v2`` from a ModelSource."""

    def __init__(self, models: ModelSource, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.models = models
        self.max_body_bytes = max_body_bytes  # the limit on an inflated (gzip, deflate) body
        self.server_metadata = response.json_body(server_metadata())

    def handle(self, request: DoorRequest) -> DoorReply:
        route = Route(NOT_FOUND)
        try:
            route = parse_route(request.method, request.path)
            return self._dispatch(route, request)
        except ModelNotFound as exc:
            return _reply(404, not_found_message(exc), route)
        except Exception as exc:
            failure = describe(exc, f"{request.method} {request.path}")
            return _reply(failure.status, failure.message, route)

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        """The envelope for ``exc``, raised while the adapter read ``request`` (a 413)."""
        failure = describe(exc, f"{request.method} {request.path}")
        return _reply(failure.status, failure.message, _route_or_none(request))

    def _dispatch(self, route: Route, request: DoorRequest) -> DoorReply:
        if route.action in _ROUTE_ERRORS:
            return _reply(*_ROUTE_ERRORS[route.action], route)
        if route.action == "server_metadata":
            return _ok(self.server_metadata)
        if route.action == "live":
            return _ok(response.json_body({"live": True}))
        if route.action == "ready":
            return self._server_ready()
        served = self.models.resolve(route.model, route.version)
        if route.action == "model_ready":
            return _ok(response.json_body({"name": served.name, "ready": True}), served)
        if route.action == "model_metadata":
            versions = available_versions(self.models, served)
            return _ok(response.json_body(model_metadata(served, versions)), served)
        return self._infer(route, served, request)

    def _server_ready(self) -> DoorReply:
        if not server_ready(self.models):
            body = response.json_body({"ready": False})
            return DoorReply(400, body.data, body.content_type)
        return _ok(response.json_body({"ready": True}))

    def _infer(self, route: Route, served: Served, request: DoorRequest) -> DoorReply:
        sent = decoded_body(
            request.body, request.headers.get("Content-Encoding"), self.max_body_bytes
        )
        parsed = parse_request(sent, request.headers.get(HEADER_LENGTH))
        outputs = infer(served, parsed)
        body = response.infer_body(served.name, served.version, parsed.id, outputs)
        return DoorReply(
            200, body.data, body.content_type, body.headers, route.model, "infer", served.version
        )


def _route_or_none(request: DoorRequest) -> Route:
    try:
        return parse_route(request.method, request.path)
    except InvalidInput:
        return Route(NOT_FOUND)


def _ok(body: response.Body, served: Served | None = None) -> DoorReply:
    if served is None:
        return DoorReply(200, body.data, body.content_type)
    return DoorReply(200, body.data, body.content_type, model=served.name, version=served.version)


def _reply(status: int, message: str, route: Route) -> DoorReply:
    verb = "infer" if route.action == "infer" else None
    return DoorReply(status, response.error_body(message), JSON, (), route.model, verb)
