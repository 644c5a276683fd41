"""The Open Inference Protocol (KServe V2) REST API without HTTP: a DoorRequest in, a
DoorReply out, for every model the repository serves.

Unknown model (or version): 404, worded as Triton words it. Every other failure is the
shared mapping (``failures.describe``) in the protocol's ``{"error": "..."}`` envelope. The
metrics count infer requests (verb ``infer``), failed ones included; metadata and health
requests are not counted (Kubernetes probes them every few seconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import smserve
from smserve.algorithms.base import Algorithm
from smserve.budget import DEFAULT as DEFAULT_BUDGET
from smserve.budget import MemoryBudget
from smserve.doors import DoorReply, DoorRequest
from smserve.errors import InvalidInput, ModelNotFound, ModelNotReady
from smserve.failures import describe
from smserve.media import JSON
from smserve.repository.status import VersionStatus
from smserve.service import InferenceService
from smserve.types import Batch, Prediction
from smserve.v2 import response
from smserve.v2.datatypes import MODEL_DATATYPE
from smserve.v2.encoding import decoded_body
from smserve.v2.outputs import Spec, known_keys, output_metadata, protocol_name, selected_keys
from smserve.v2.request import HEADER_LENGTH, InferRequest, parse_request
from smserve.v2.routes import NOT_ALLOWED, NOT_FOUND, Route, parse_route
from smserve.v2.tensors import decode_input, model_matrix, only_input

SERVER_NAME = "smserve"
EXTENSIONS = ("binary_tensor_data",)
DEFAULT_MAX_BODY_BYTES = 6 * 1024 * 1024  # Settings.max_payload_bytes's default
INPUT_NAME = "input__0"  # the name Triton's FIL backend gives a tree model's one input
_ROUTE_ERRORS = {NOT_FOUND: (404, "Not Found"), NOT_ALLOWED: (405, "Method Not Allowed")}


class Served(Protocol):
    """One loaded model version (``smserve.repository.loading.ServedModel``)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def algorithm(self) -> Algorithm: ...
    @property
    def service(self) -> InferenceService: ...
    @property
    def outputs(self) -> Mapping[str, Spec]: ...


class ModelSource(Protocol):
    """Where the API finds models (``smserve.repository.modes.Models``)."""

    def names(self) -> tuple[str, ...]: ...

    def resolve(self, name: str, version: int | None = None) -> Served:
        """Raises ModelNotFound (or ModelNotReady)."""
        ...

    def statuses(self, name: str) -> Sequence[VersionStatus]:
        """Every version's state; raises ModelNotFound."""
        ...


class V2API:
    """Answers every request under ``/v2`` from a ModelSource."""

    def __init__(
        self,
        models: ModelSource,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        budget: MemoryBudget = DEFAULT_BUDGET,
    ) -> None:
        self.models = models
        # How far a gzip or deflate body may inflate, and each request's memory budget.
        self.inflation_limit = budget.inflation_limit(max_body_bytes)
        self.budget = budget
        self.server_metadata = response.json_body(
            {"name": SERVER_NAME, "version": smserve.__version__, "extensions": EXTENSIONS}
        )

    def handle(self, request: DoorRequest) -> DoorReply:
        route = Route(NOT_FOUND)
        try:
            route = parse_route(request.method, request.path)
            return self._dispatch(route, request)
        except ModelNotFound as exc:
            return _reply(404, _not_found(exc), route)
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
            versions = self._available_versions(served)
            return _ok(response.json_body(model_metadata(served, versions)), served)
        return self._infer(route, served, request)

    def _available_versions(self, served: Served) -> tuple[int, ...]:
        """The model's versions that answer now (the one that answered at least)."""
        ready = {status.version for status in self.models.statuses(served.name) if status.ready}
        return tuple(sorted(ready | {served.version}))

    def _server_ready(self) -> DoorReply:
        """Ready when every model the repository names has a version that answers."""
        try:
            for name in self.models.names():
                self.models.resolve(name)
        except (ModelNotFound, ModelNotReady):
            body = response.json_body({"ready": False})
            return DoorReply(400, body.data, body.content_type)
        return _ok(response.json_body({"ready": True}))

    def _infer(self, route: Route, served: Served, request: DoorRequest) -> DoorReply:
        sent = decoded_body(
            request.body, request.headers.get("Content-Encoding"), *self.inflation_limit
        )
        budget = self.budget.for_body(len(sent))
        infer = parse_request(sent, request.headers.get(HEADER_LENGTH), budget)
        tensor = only_input(infer.inputs)
        values = decode_input(tensor, budget)
        matrix = model_matrix(values, tensor.name, served.algorithm.n_features)
        outputs = _run(served, Batch(matrix), infer)
        body = response.infer_body(served.name, served.version, infer.id, outputs)
        return DoorReply(
            200, body.data, body.content_type, body.headers, route.model, "infer", served.version
        )


def model_metadata(served: Served, versions: Sequence[int]) -> dict[str, object]:
    """``$metadata_model_response``: the available ``versions``, one FP32 input
    [-1, n_features] and every output."""
    width = served.algorithm.n_features
    return {
        "name": served.name,
        "versions": [str(version) for version in versions],
        "platform": served.algorithm.name,
        "inputs": [{"name": INPUT_NAME, "datatype": MODEL_DATATYPE, "shape": [-1, width or -1]}],
        "outputs": output_metadata(served.outputs),
    }


def _run(served: Served, batch: Batch, infer: InferRequest) -> list[response.OutputTensor]:
    """The requested outputs (or the default ones), in order."""
    service = served.service
    if infer.outputs is None:
        prediction = service.predict(batch)
        return [
            response.OutputTensor(protocol_name(key), values, infer.binary_output)
            for key, values in prediction.items()
        ]
    names = [output.name for output in infer.outputs]
    keys = selected_keys(names, known_keys(service, served.outputs))
    prediction = _predict(service, batch, keys)
    return [
        response.OutputTensor(output.name, prediction.outputs[key], output.binary)
        for output, key in zip(infer.outputs, keys, strict=True)
    ]


def _predict(service: InferenceService, batch: Batch, keys: tuple[str, ...]) -> Prediction:
    """A selectable model computes only ``keys``; another gives its outputs, and picks."""
    if not service.output_keys:
        return service.predict(batch)
    return service.predict(batch, tuple(dict.fromkeys(keys)))


def _route_or_none(request: DoorRequest) -> Route:
    try:
        return parse_route(request.method, request.path)
    except InvalidInput:
        return Route(NOT_FOUND)


def _not_found(exc: ModelNotFound) -> str:
    """Triton's words for a model or version it does not serve."""
    name = exc.model_name
    if exc.version is not None:
        return f"Request for unknown model: '{name}' version {exc.version} is not found"
    if not exc.whole_model:
        return f"Request for unknown model: '{name}' has no available versions"
    return f"Request for unknown model: '{name}' is not found"


def _ok(body: response.Body, served: Served | None = None) -> DoorReply:
    if served is None:
        return DoorReply(200, body.data, body.content_type)
    return DoorReply(200, body.data, body.content_type, model=served.name, version=served.version)


def _reply(status: int, message: str, route: Route) -> DoorReply:
    verb = "infer" if route.action == "infer" else None
    return DoorReply(status, response.error_body(message), JSON, (), route.model, verb)
