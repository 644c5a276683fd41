"""InferenceService: negotiate -> decode -> predict -> encode, with no HTTP in sight.

Negotiation (Content-Type and Accept) is decided before any decode or predict, so a 415 or
406 never costs a prediction. Every decoded batch passes ``check_finite`` (no infinities)."""

from __future__ import annotations

from dataclasses import dataclass

from smserve.algorithms.base import Algorithm
from smserve.codecs import CodecRegistry
from smserve.codecs.finite import check_finite
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.media import canonical
from smserve.types import Batch, Prediction


@dataclass(frozen=True, slots=True)
class Reply:
    """An encoded answer; ``media_type`` is the exact response Content-Type."""

    body: bytes
    media_type: str


class InferenceService:
    """One algorithm behind the codec registry; shared by every request of a worker."""

    def __init__(self, algorithm: Algorithm, registry: CodecRegistry, settings: Settings) -> None:
        self.algorithm = algorithm
        self.registry = registry
        self.default_accept = _default_accept(settings, algorithm, registry)

    def invoke(self, body: bytes, content_type: str | None, accept: str | None) -> Reply | None:
        """Answer one request; None means there was nothing to predict (HTTP 204)."""
        encoder = self.registry.encoder_for(accept, self.default_accept)
        decoder, media = self.registry.decoder_for(
            content_type, self.algorithm.default_content_type
        )
        if not body:
            return None
        batch = decoder.decode(body, media)
        check_finite(batch, decoder.media_type)
        return Reply(encoder.encode(self.predict(batch)), encoder.media_type)

    def predict(self, batch: Batch) -> Prediction:
        return self.algorithm.predict(batch)


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
