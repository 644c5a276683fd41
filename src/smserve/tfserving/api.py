"""The TF Serving REST API without HTTP: ``(method, raw path, body)`` in, a reply out.

Checks run in TF Serving's order. Predict: parse the body, check ``signature_name``, find the
model (404, or 400 for a label), find the signature, then decode ``instances``/``inputs``.
Classify and regress check the whole body before looking the model up. Every failure becomes
``{"error": "<message>"}`` with the status its error class carries.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from smserve.algorithms.base import SelectableOutputs
from smserve.errors import InvalidInput, ServingError
from smserve.tfserving import response, signatures
from smserve.tfserving.examples import parse_examples, to_rows
from smserve.tfserving.jsonparse import parse_document
from smserve.tfserving.predict import decode_inputs, object_body, signature_name
from smserve.tfserving.routes import Route, malformed, parse_route
from smserve.tfserving.servable import Servable
from smserve.tfserving.status import VersionStatus, canonical_code, metadata_body, status_body
from smserve.tfserving.tensors import shape_text
from smserve.types import Batch, Prediction

logger = logging.getLogger(__name__)


class Served(Protocol):
    """One model version that can answer requests."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def servable(self) -> Servable: ...


class ModelSource(Protocol):
    """Where the API finds models: the repository (or the multi-model registry)."""

    def served(self, name: str, version: int | None, label: str | None) -> Served:
        """The version to answer with; raises ModelNotFound (404) or InvalidInput (label)."""
        ...

    def statuses(
        self, name: str, version: int | None, label: str | None
    ) -> Sequence[VersionStatus]:
        """Status of every version (or the one asked for); raises ModelNotFound."""
        ...


@dataclass(frozen=True, slots=True)
class ApiReply:
    """An answer plus what metrics and headers need: the model name as requested, the verb
    (empty for GETs), the version that answered, and the canonical status-code name."""

    status: int
    body: bytes
    model: str = ""
    verb: str = ""
    version: int | None = None

    @property
    def code(self) -> str:
        return canonical_code(self.status)


class TFServingAPI:
    """Answers every request under ``/v1/`` from a ModelSource."""

    def __init__(self, models: ModelSource) -> None:
        self.models = models

    def handle(self, method: str, path: str, body: bytes) -> ApiReply:
        route = Route("malformed")
        try:
            route = parse_route(method, path)
            return self._dispatch(route, method, path, body)
        except ServingError as exc:
            if exc.status >= 500:
                logger.error("%s %s failed: %s", method, path, exc.message, exc_info=exc)
            verb = route.action if route.action in ("predict", "classify", "regress") else ""
            return ApiReply(int(exc.status), response.error_body(exc.message), route.model, verb)

    def _dispatch(self, route: Route, method: str, path: str, body: bytes) -> ApiReply:
        if route.action == "malformed":
            raise malformed(method, path)
        if route.action in ("status", "metadata") and not route.model:
            raise InvalidInput("Missing model name in request.")
        if route.action == "status":
            statuses = self.models.statuses(route.model, route.version, route.label)
            return ApiReply(200, status_body(statuses), route.model)
        if route.action == "metadata":
            served = self._served(route)
            servable = served.servable
            names = servable.feature_names if servable.outputs else None
            text = metadata_body(route.model, served.version, servable.signatures, names)
            return ApiReply(200, text, route.model, version=served.version)
        if route.action == "predict":
            return self._predict(route, body)
        return self._classify_or_regress(route, body)

    def _served(self, route: Route) -> Served:
        return self.models.served(route.model, route.version, route.label)

    def _predict(self, route: Route, body: bytes) -> ApiReply:
        document = parse_document(body)
        name = signature_name(object_body(document)) or signatures.DEFAULT_SIGNATURE
        served = self._served(route)
        signature = _predict_signature(served.servable, name)
        inputs = decode_inputs(document, signature)
        matrix = _matrix(inputs.tensors["inputs"], served.servable)
        prediction = _run(served.servable, matrix, served.servable.outputs.get(name))
        writer = response.predictions_body if inputs.row_format else response.outputs_body
        return ApiReply(200, writer(prediction.outputs), route.model, "predict", served.version)

    def _classify_or_regress(self, route: Route, body: bytes) -> ApiReply:
        request = parse_examples(parse_document(body), route.action)
        served = self._served(route)
        servable = served.servable
        _check_signature(servable, route.action, request.signature_name)
        prediction = _run(servable, to_rows(request, servable.feature_index))
        if route.action == "classify":
            assert servable.classifier is not None
            text = response.classify_body(*servable.classifier(prediction))
        else:
            assert servable.regressor is not None
            text = response.regress_body(servable.regressor(prediction))
        return ApiReply(200, text, route.model, route.action, served.version)


def _predict_signature(servable: Servable, name: str) -> signatures.Signature:
    signature = servable.signatures.get(name)
    if signature is None:
        raise InvalidInput(f'Serving signature name: "{name}" not found in signature def')
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
        raise InvalidInput(f"No signature was found with the name: {name}")
    if signature.method_name != method:
        raise InvalidInput(
            f"Expected {kind} signature method_name to be {method}. Was: {signature.method_name}"
        )


def _matrix(tensor: np.ndarray, servable: Servable) -> np.ndarray:
    """The ``inputs`` tensor as the model's (n_rows, n_features) matrix."""
    width = servable.algorithm.n_features
    if tensor.ndim != 2 or (width is not None and tensor.shape[1] != width):
        expected = shape_text([-1, width if width is not None else -1])
        raise InvalidInput(
            f"Input 'inputs' has shape {shape_text(tensor.shape)}, but the model takes "
            f"{expected}: one list of {width if width is not None else 'n'} numbers per row"
        )
    return np.ascontiguousarray(tensor, dtype=np.float32)


def _run(
    servable: Servable, rows: np.ndarray, outputs: tuple[str, ...] | None = None
) -> Prediction:
    """The algorithm's default outputs, or ``outputs`` (a signature's, e.g. ``explain``)."""
    batch = Batch(np.ascontiguousarray(rows, dtype=np.float32))
    algorithm = servable.algorithm
    if outputs is not None and isinstance(algorithm, SelectableOutputs):
        return algorithm.predict(batch, outputs)
    return algorithm.predict(batch)
