"""The codec interfaces: a Decoder turns a request body into a Batch, an Encoder turns a
Prediction into a response body. Codecs are instances, so configuration is a constructor
argument; they hold no per-request state and are shared by every request of a worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from smserve.media import MediaType
from smserve.types import Batch, Prediction

# Parameters a text decoder always tolerates: charset must name UTF-8 (or its ASCII subset).
TEXT_PARAMETERS: Mapping[str, frozenset[str] | None] = {
    "charset": frozenset({"utf-8", "utf8", "us-ascii"}),
}


@runtime_checkable
class Decoder(Protocol):
    """Decodes one media type. ``parameters`` maps each accepted parameter name to its
    accepted lower-case values (None: any value); the registry answers 415 for the rest."""

    media_type: str
    parameters: Mapping[str, frozenset[str] | None]

    def decode(self, body: bytes, media: MediaType) -> Batch:
        """Raise DecodeError (400) with a location for malformed bodies."""
        ...


@runtime_checkable
class Encoder(Protocol):
    """Encodes one media type; the response Content-Type is exactly ``media_type``."""

    media_type: str

    def encode(self, prediction: Prediction) -> bytes: ...
