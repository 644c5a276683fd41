"""The codec interfaces: a Decoder turns a request body into a Batch, an Encoder turns a
Prediction into a response body. Codecs are instances, so configuration is a constructor
argument; they hold no per-request state and are shared by every request of a worker."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from smserve.budget import MemoryBudget, RequestBudget
from smserve.media import MediaType
from smserve.types import Batch, Prediction

SPARSE_COLUMN_BYTES = 8  # what a predictor may keep per column of a sparse batch
# Parameters a text decoder always tolerates: charset must name UTF-8 (or its ASCII subset).
TEXT_PARAMETERS: Mapping[str, frozenset[str] | None] = {
    "charset": frozenset({"utf-8", "utf8", "us-ascii"}),
}


@dataclass(frozen=True, slots=True)
class DecodeContext:
    """What a decoder may know about the model and the worker, handed over by the service
    once per worker (a codec never imports an algorithm).

    ``feature_names``: the model's own names, one per column, in order
    (``Algorithm.feature_names``); empty when the model has none, so that its columns are
    known only by position. Formats with named columns (Parquet, Arrow, JSON objects) take
    columns by these names when there are any (``codecs/columnar.py``).
    ``n_features``: the model's column count, None when the model does not say.
    ``budget``: the worker's memory rule; a decoder takes its request's share from it
    (``budget.for_body``) and checks what the body declares before allocating.

    ``key_names`` (derived): the names an object of features may use: the model's own, else
    ``f0``.. for each of its columns (XGBoost's names for unnamed columns).
    """

    feature_names: tuple[str, ...] = ()
    n_features: int | None = None
    budget: MemoryBudget = MemoryBudget()
    key_names: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        if not self.feature_names and self.n_features is not None:
            unnamed = tuple(f"f{i}" for i in range(self.n_features))
            object.__setattr__(self, "key_names", unnamed)  # frozen: set once, here
        else:
            object.__setattr__(self, "key_names", self.feature_names)

    @property
    def named(self) -> bool:
        """Whether the model names its columns (else they are known by position only)."""
        return bool(self.feature_names)

    def check_sparse_width(self, width: int, budget: RequestBudget, media_type: str) -> None:
        """Charge a sparse batch's width (a huge index makes a huge width): what a predictor
        may keep per column. A model with a known column count refuses wider batches before
        predicting, so that count bounds it."""
        bound = width if self.n_features is None else min(width, self.n_features)
        budget.check(SPARSE_COLUMN_BYTES * bound, f"{media_type}: a sparse batch {width} wide")


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
