"""The codec interfaces: a Decoder turns a request body into a Batch, an Encoder turns a
Prediction into a response body. Codecs are instances, so configuration is a constructor
argument; they hold no per-request state and are shared by every request of a worker."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from smserve.media import MediaType
from smserve.types import Batch, Prediction

# Parameters a text decoder always tolerates: charset must name UTF-8 (or its ASCII subset).
TEXT_PARAMETERS: Mapping[str, frozenset[str] | None] = {
    "charset": frozenset({"utf-8", "utf8", "us-ascii"}),
}


@dataclass(frozen=True, slots=True)
class DecodeContext:
    """What a decoder may know about the model, handed over by the service once per worker
    (a codec never imports an algorithm).

    ``feature_names``: one name per model column, in order (``Algorithm.feature_names``);
    empty when the model does not say how many columns it takes. Formats with named columns
    (Parquet, Arrow, JSON objects) use them to put columns in the model's order.
    """

    feature_names: tuple[str, ...] = ()

    @property
    def named(self) -> bool:
        """Whether the names are the model's own rather than XGBoost's ``f0``.. defaults."""
        return self.feature_names != tuple(f"f{i}" for i in range(len(self.feature_names)))


UNNAMED = DecodeContext()


@runtime_checkable
class Decoder(Protocol):
    """Decodes one media type. ``parameters`` maps each accepted parameter name to its
    accepted lower-case values (None: any value); the registry answers 415 for the rest."""

    media_type: str
    parameters: Mapping[str, frozenset[str] | None]

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        """Raise DecodeError (400) with a location for malformed bodies."""
        ...


@runtime_checkable
class Encoder(Protocol):
    """Encodes one media type; the response Content-Type is exactly ``media_type``.

    ``chunked``: encoding consecutive row chunks and joining the bodies gives exactly the whole
    answer's body, and writing costs about as much per value as predicting (text), so the
    service may overlap the two for wide answers (``overlap``)."""

    media_type: str
    chunked: bool

    def encode(self, prediction: Prediction) -> bytes: ...
