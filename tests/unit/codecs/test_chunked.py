"""``Encoder.chunked``: a codec that says so writes the same body for rows encoded in
consecutive chunks and joined as for all rows at once (the service's overlap relies on it);
every registered encoder says whether it does."""

from __future__ import annotations

import numpy as np
import pytest

from smserve.codecs import default_registry
from smserve.codecs.base import Encoder
from smserve.config import Settings
from smserve.media import CSV, JSONLINES
from smserve.types import Prediction

REGISTRY = default_registry(Settings())
ENCODERS = [REGISTRY.encoder_for(media, media) for media in REGISTRY.offers]


def predictions(n_rows: int) -> list[Prediction]:
    rng = np.random.default_rng(11)
    contributions = rng.normal(size=(n_rows, 3, 5)).astype(np.float32)
    contributions[rng.random(contributions.shape) < 0.1] = np.nan
    scores = rng.random((n_rows, 3)).astype(np.float32)
    labels = rng.integers(0, 3, n_rows).astype(np.float32)
    return [
        Prediction({"c": contributions}, columns=("c",)),
        Prediction({"label": labels, "score": scores, "c": contributions}, columns=("c",)),
        Prediction({"score": scores[:, 0]}),
    ]


def sliced(prediction: Prediction, start: int, stop: int) -> Prediction:
    outputs = {key: array[start:stop] for key, array in prediction.items()}
    return Prediction(outputs, columns=prediction.columns)


@pytest.mark.parametrize("encoder", [e for e in ENCODERS if e.chunked], ids=lambda e: e.media_type)
@pytest.mark.parametrize("cuts", [(1,), (17, 18, 40), (25,)], ids=str)
def test_chunked_encoders_join_chunks_into_the_whole_body(
    encoder: Encoder, cuts: tuple[int, ...]
) -> None:
    for prediction in predictions(50):
        bounds = [0, *cuts, 50]
        parts = [
            encoder.encode(sliced(prediction, a, b))
            for a, b in zip(bounds, bounds[1:], strict=False)
        ]
        assert b"".join(parts) == encoder.encode(prediction)


def test_the_line_formats_are_the_chunked_ones() -> None:
    assert {e.media_type for e in ENCODERS if e.chunked} == {CSV, JSONLINES}
