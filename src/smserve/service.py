"""InferenceService: negotiate -> decode -> predict -> encode, with no HTTP in sight.

Negotiation (Content-Type and Accept) is decided before any decode or predict, so a 415 or
406 never costs a prediction, nor does a malformed or unknown ``outputs`` custom attribute (the
request's output selection, see ``custom_attributes``). Every decoded batch passes
``check_finite`` (no infinities). A door that decodes its protocol's tensors itself (TF
Serving, V2, gRPC) hands them to ``tensor_batch``, which checks them as a decoded body is
checked (the model's width, no infinities), so that no door reaches a model with less.
A large, wide answer written as text is predicted and written in overlapping row chunks
(``overlap``); the body is the same.

``invoke`` times its three stages (four clock reads, well under a microsecond) and returns the
seconds with the reply, for the metrics; an overlapped answer's encoding counts as predicting
(the two run at once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np

from smserve.algorithms.base import Algorithm, SelectableOutputs
from smserve.budget import MemoryBudget
from smserve.codecs import CodecRegistry
from smserve.codecs.base import DecodeContext, Encoder
from smserve.codecs.finite import check_finite
from smserve.config import Settings
from smserve.custom_attributes import requested_outputs
from smserve.errors import ConfigError, InvalidInput
from smserve.media import canonical
from smserve.overlap import PROCESS_OVERLAP, Overlap
from smserve.types import Batch, Prediction

# A door's words for a tensor of the wrong shape: (its shape, the model's width or None).
ShapeWording = Callable[[tuple[int, ...], int | None], str]


@dataclass(frozen=True, slots=True)
class Reply:
    """An encoded answer; ``media_type`` is the exact response Content-Type; ``outputs`` the
    keys it holds, for an algorithm with selectable outputs (else None); ``stages`` the
    seconds spent decoding, predicting and encoding."""

    body: bytes
    media_type: str
    outputs: tuple[str, ...] | None = None
    stages: tuple[float, float, float] | None = field(default=None, compare=False)


class InferenceService:
    """One algorithm behind the codec registry; shared by every request of a worker."""

    def __init__(
        self,
        algorithm: Algorithm,
        registry: CodecRegistry,
        settings: Settings,
        overlap: Overlap = PROCESS_OVERLAP,
    ) -> None:
        self.algorithm = algorithm
        # What decoders may know of the model, and each request's memory budget.
        self.context = DecodeContext(
            algorithm.feature_names, algorithm.n_features, MemoryBudget.of(settings)
        )
        self.registry = registry
        self.default_accept = _default_accept(settings, algorithm, registry)
        # Checked once: a runtime Protocol check costs microseconds per request.
        self.selectable = algorithm if isinstance(algorithm, SelectableOutputs) else None
        self.overlap = overlap

    def invoke(
        self,
        body: bytes,
        content_type: str | None,
        accept: str | None,
        attributes: str | None = None,
    ) -> Reply | None:
        """Answer one request; None means there was nothing to predict (HTTP 204).

        ``attributes`` is the request's SageMaker CustomAttributes; its ``outputs`` overrides
        the endpoint's outputs. Raises InvalidInput for a malformed or unknown ``outputs``."""
        encoder = self.registry.encoder_for(accept, self.default_accept)
        decoder, media = self.registry.decoder_for(
            content_type, self.algorithm.default_content_type
        )
        outputs = self.requested(attributes)
        if not body:
            return None
        started = perf_counter()
        batch = decoder.decode(body, media, self.context)
        check_finite(batch, decoder.media_type)
        decoded = perf_counter()
        if encoder.chunked and self.wide(outputs):
            body = self.overlapped(batch, outputs, encoder)
            predicted = perf_counter()
        else:
            prediction = self.predict(batch, outputs)
            predicted = perf_counter()
            body = encoder.encode(prediction)
        stages = (decoded - started, predicted - decoded, perf_counter() - predicted)
        return Reply(body, encoder.media_type, self.applied(outputs), stages)

    def tensor_batch(self, values: np.ndarray, name: str, wrong_shape: ShapeWording) -> Batch:
        """Input tensor ``name`` as the model's batch: a float32, C-contiguous (n_rows,
        n_features) matrix of finite values. Raises InvalidInput for another shape (worded
        by the door: ``wrong_shape``) or an infinite value (NaN is a missing value)."""
        width = self.algorithm.n_features
        if values.ndim != 2 or (width is not None and values.shape[1] != width):
            raise InvalidInput(wrong_shape(tuple(values.shape), width))
        with np.errstate(over="ignore"):  # beyond float32's range -> inf, refused just below
            matrix = np.ascontiguousarray(values, dtype=np.float32)
        _check_finite(matrix, name)
        return Batch(matrix)

    def answer(self, batch: Batch, outputs: tuple[str, ...] | None, encoder: Encoder) -> bytes:
        """The encoded prediction; ``outputs`` checked (``requested``), None: the endpoint's."""
        if not (encoder.chunked and self.wide(outputs)):
            return encoder.encode(self.predict(batch, outputs))
        return self.overlapped(batch, outputs, encoder)

    def overlapped(self, batch: Batch, outputs: tuple[str, ...] | None, encoder: Encoder) -> bytes:
        """A wide answer predicted and encoded in overlapping row chunks (``overlap``)."""
        return self.overlap.answer(
            batch, lambda rows, spare: self.predict(rows, outputs, spare), encoder.encode
        )

    def requested(self, attributes: str | None) -> tuple[str, ...] | None:
        """The outputs ``attributes`` selects (None: the endpoint's); raises InvalidInput."""
        return requested_outputs(attributes, self.output_keys)

    @property
    def output_keys(self) -> tuple[str, ...]:
        """The keys a request may select; empty when the algorithm's outputs are fixed."""
        return () if self.selectable is None else self.selectable.output_keys

    def applied(self, outputs: tuple[str, ...] | None) -> tuple[str, ...] | None:
        """The keys an answer holds, when the algorithm's outputs are selectable."""
        if self.selectable is None:
            return None
        return self.selectable.default_outputs if outputs is None else outputs

    def wide(self, outputs: tuple[str, ...] | None) -> bool:
        """Whether the answer holds one value per feature per row (an explanation)."""
        if self.selectable is None:
            return False
        return not self.selectable.wide_outputs.isdisjoint(self.applied(outputs) or ())

    def predict(
        self, batch: Batch, outputs: tuple[str, ...] | None = None, spare_cpu: bool = False
    ) -> Prediction:
        """``outputs`` must have been checked (``requested``); None: the endpoint's.
        ``spare_cpu``: another thread of this request is busy meanwhile (an overlap)."""
        if self.selectable is None:
            assert outputs is None, "requested() checked the keys"
            return self.algorithm.predict(batch)
        return self.selectable.predict(batch, outputs, spare_cpu)


def _check_finite(matrix: np.ndarray, name: str) -> None:
    infinite = np.isinf(matrix)
    if not infinite.any():
        return
    row, column = divmod(int(np.argmax(infinite)), matrix.shape[1])
    raise InvalidInput(
        f"input '{name}': row {row}, column {column} (0-based) is infinite or beyond "
        "float32's range (about 3.4e38); features must be finite numbers"
    )


def _default_accept(settings: Settings, algorithm: Algorithm, registry: CodecRegistry) -> str:
    """The response type for a missing or ``*/*`` Accept; a type no encoder writes is a
    startup error rather than a 500 on every such request."""
    if settings.default_accept is None:
        return algorithm.default_accept
    accept = canonical(settings.default_accept.partition(";")[0])
    if accept not in registry.offers:
        raise ConfigError(
            f"SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT={settings.default_accept!r} is not a type "
            f"the server writes; use one of: {', '.join(registry.offers)}"
        )
    return accept
