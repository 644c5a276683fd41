"""The TF Serving REST API without HTTP: a DoorRequest for a path under ``/v1/`` in, a
DoorReply out (every reply ``application/json``).

Checks run in TF Serving's order. Predict: parse the body, check ``signature_name``, find the
model (404, or 400 for a label), find the signature, then decode ``instances``/``inputs``.
Classify and regress check the whole body before looking the model up. Every tensor reaches
the model through the model's InferenceService (``tensor_batch``, then ``predict``), with the
checks every door's input passes: the model's width, no infinite values. Every failure becomes
``{"error": "<message>"}`` with the status its error class carries; the repository's
protocol-neutral lookup errors are worded as TF Serving words them. gzip request bodies are
inflated. OPTIONS is the CORS preflight: 200 with an ``Origin`` of ``http(s)://...``, else 400.
Every reply counts in the metrics, as its verb (``predict``, ``classify``, ``regress``) or
``""`` for the GETs.
"""

from __future__ import annotations

import re

import numpy as np

from smserve.budget import DEFAULT as DEFAULT_BUDGET
from smserve.budget import MemoryBudget
from smserve.compressed import inflate
from smserve.doors import DoorReply, DoorRequest
from smserve.errors import InvalidInput, ModelNotFound, ServingError, UnknownLabel, excerpt
from smserve.failures import describe
from smserve.media import JSON
from smserve.repository.loading import ServedModel
from smserve.repository.modes import Models
from smserve.tfserving import response, signatures
from smserve.tfserving.encoding import is_gzip
from smserve.tfserving.examples import parse_examples, to_rows
from smserve.tfserving.jsonparse import parse_document
from smserve.tfserving.predict import decode_inputs, object_body, signature_name
from smserve.tfserving.routes import Route, malformed, parse_route
from smserve.tfserving.servable import Servable, servable_of
from smserve.tfserving.status import metadata_body, status_body
from smserve.tfserving.tensors import shape_text
from smserve.types import Prediction

ORIGIN_PATTERN = r"https?://"  # a preflight from a web page (searched, not anchored)
_ORIGIN = re.compile(ORIGIN_PATTERN)
_VERBS = ("predict", "classify", "regress")


class TFServingAPI:
    """Answers every request under ``/v1/`` from the repository."""

    def __init__(
        self, models: Models, max_body_bytes: int, budget: MemoryBudget = DEFAULT_BUDGET
    ) -> None:
        self.models = models
        self.max_body_bytes = max_body_bytes
        self.budget = budget  # each request's memory budget, its body inflated

    def handle(self, request: DoorRequest) -> DoorReply:
        if request.method == "OPTIONS":
            return _preflight(request)
        route = Route("malformed")
        try:
            route = parse_route(request.method, request.path)
            return self._dispatch(route, request)
        except Exception as exc:
            return self._error(exc, request, route)

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        """The answer to ``exc`` raised before the route was looked at (reading the body)."""
        try:
            route = parse_route(request.method, request.path)
        except ServingError:
            route = Route("malformed")
        return self._error(exc, request, route)

    def _error(self, exc: Exception, request: DoorRequest, route: Route) -> DoorReply:
        failure = describe(exc, f"{request.method} {request.path}")
        message = _worded(exc, route) or failure.message
        verb = route.action if route.action in _VERBS else ""
        body = response.error_body(message)
        return DoorReply(failure.status, body, JSON, model=route.model, verb=verb)

    def _dispatch(self, route: Route, request: DoorRequest) -> DoorReply:
        if route.action == "malformed":
            raise malformed(request.method, request.path)
        if route.action in ("status", "metadata") and not route.model:
            raise InvalidInput("Missing model name in request.")
        if route.action == "status":
            statuses = self.models.statuses(route.model, route.version, route.label)
            return _reply(status_body(statuses), route)
        if route.action == "metadata":
            return self._metadata(route)
        body = self._body(request)
        if route.action == "predict":
            return self._predict(route, body)
        return self._classify_or_regress(route, body)

    def _body(self, request: DoorRequest) -> bytes:
        if is_gzip(request.headers.get("Content-Encoding")) and request.body:
            limit, setting = self.budget.inflation_limit(self.max_body_bytes)
            return inflate(request.body, "gzip", limit, setting)
        return request.body

    def _served(self, route: Route) -> tuple[ServedModel, Servable]:
        served = self.models.resolve(route.model, route.version, route.label)
        return served, servable_of(served)

    def _metadata(self, route: Route) -> DoorReply:
        served, servable = self._served(route)
        names = servable.feature_names if servable.outputs else None
        text = metadata_body(route.model, served.version, servable.signatures, names)
        return _reply(text, route, "", served.version)

    def _predict(self, route: Route, body: bytes) -> DoorReply:
        document = parse_document(body, self.budget.for_body(len(body)))
        name = signature_name(object_body(document)) or signatures.DEFAULT_SIGNATURE
        served, servable = self._served(route)
        signature = _predict_signature(servable, name)
        inputs = decode_inputs(document, signature)
        prediction = _run(served, inputs.tensors["inputs"], servable.outputs.get(name))
        writer = response.predictions_body if inputs.row_format else response.outputs_body
        return _reply(writer(prediction.outputs), route, "predict", served.version)

    def _classify_or_regress(self, route: Route, body: bytes) -> DoorReply:
        request = parse_examples(
            parse_document(body, self.budget.for_body(len(body))), route.action
        )
        served, servable = self._served(route)
        _check_signature(servable, route.action, request.signature_name)
        prediction = _run(served, to_rows(request, servable.feature_index))
        if route.action == "classify":
            assert servable.classifier is not None
            text = response.classify_body(*servable.classifier(prediction))
        else:
            assert servable.regressor is not None
            text = response.regress_body(servable.regressor(prediction))
        return _reply(text, route, route.action, served.version)


def _reply(body: bytes, route: Route, verb: str = "", version: int | None = None) -> DoorReply:
    return DoorReply(200, body, JSON, model=route.model, verb=verb, version=version)


def _preflight(request: DoorRequest) -> DoorReply:
    if _ORIGIN.search(request.headers.get("Origin") or ""):
        return DoorReply(200, b"", JSON, verb="")
    message = "Origin header is missing in CORS preflight"
    return DoorReply(400, response.error_body(message), JSON, verb="")


def _worded(exc: Exception, route: Route) -> str | None:
    """TF Serving's words for the repository's lookup errors (None: the error's own)."""
    if isinstance(exc, UnknownLabel):
        return f"Unrecognized servable version label: {exc.label}"
    if not isinstance(exc, ModelNotFound):
        return None
    name, version = exc.model_name, exc.version
    if route.action == "status":
        if exc.whole_model or version is None:
            return f"Could not find any versions of model {name}"
        return f"Could not find version {version} of model {name}"
    if version is None:
        return f"Servable not found for request: Latest({name})"
    return f"Servable not found for request: Specific({name}, {version})"


def _predict_signature(servable: Servable, name: str) -> signatures.Signature:
    signature = servable.signatures.get(name)
    if signature is None:
        raise InvalidInput(f'Serving signature name: "{excerpt(name)}" not found in signature def')
    if signature.method_name != signatures.PREDICT_METHOD:
        raise InvalidInput(
            f"Expected prediction signature method_name to be {signatures.PREDICT_METHOD}. "
            f"Was: {signature.method_name}"
        )
    return signature


_SIGNATURE_FOR = {
    "classify": (signatures.CLASSIFY_SIGNATURE, signatures.CLASSIFY_METHOD, "classification"),
    "regress": (signatures.REGRESS_SIGNATURE, signatures.REGRESS_METHOD, "regression"),
}


def _check_signature(servable: Servable, verb: str, requested: str) -> None:
    """Without ``signature_name``, classify and regress use the model's classification or
    regression signature (TF Serving would try ``serving_default``, which is our predict
    signature and could never classify)."""
    default, method, kind = _SIGNATURE_FOR[verb]
    name = requested or default
    signature = servable.signatures.get(name)
    if signature is None:
        raise InvalidInput(f"No signature was found with the name: {excerpt(name)}")
    if signature.method_name != method:
        raise InvalidInput(
            f"Expected {kind} signature method_name to be {method}. Was: {signature.method_name}"
        )


def _wrong_shape(shape: tuple[int, ...], width: int | None) -> str:
    """The ``inputs`` tensor in a shape the model does not take, in the door's words."""
    expected = shape_text([-1, width if width is not None else -1])
    return (
        f"Input 'inputs' has shape {shape_text(shape)}, but the model takes "
        f"{expected}: one list of {width if width is not None else 'n'} numbers per row"
    )


def _run(
    served: ServedModel, rows: np.ndarray, outputs: tuple[str, ...] | None = None
) -> Prediction:
    """The model's default outputs, or ``outputs`` (a signature's, e.g. ``explain``), through
    its service: the same checks as every door's input."""
    service = served.service
    batch = service.tensor_batch(rows, "inputs", _wrong_shape)
    return service.predict(batch, outputs if service.output_keys else None)
