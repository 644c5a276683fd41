"""An algorithm's outputs (names, element types, shapes per row), learned once at load by
predicting an empty batch (no rows, the model's width), so every door can describe them
without predicting again. Empty, not one row: every output's shape per row and type is the
same, and a row would cost a real prediction of every output at start-up (explanations of a
2,800-tree model: seconds)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from smserve.algorithms.base import Algorithm, SelectableOutputs
from smserve.types import Batch, OutputSpec, Prediction

logger = logging.getLogger(__name__)


def output_specs(algorithm: Algorithm) -> Mapping[str, OutputSpec]:
    """Every output ``algorithm`` can produce, its default ones first; empty when its width
    is unknown or it cannot score a row of zeros (it still serves; it only lacks metadata)."""
    example = _probe(algorithm)
    return {name: OutputSpec.of(array) for name, array in example.items()}


def _probe(algorithm: Algorithm) -> Prediction:
    n = algorithm.n_features
    if n is None:
        return Prediction({})
    batch = Batch(np.zeros((0, n), dtype=np.float32))
    try:
        if isinstance(algorithm, SelectableOutputs):
            keys = (*algorithm.default_outputs, *algorithm.output_keys)
            return algorithm.predict(batch, tuple(dict.fromkeys(keys)))
        return algorithm.predict(batch)
    except Exception:
        logger.warning("could not learn the outputs of the %s model", algorithm.name, exc_info=True)
        return Prediction({})
