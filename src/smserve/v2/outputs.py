"""Which outputs an infer request gets, under the protocol's names, and their metadata.

Output tensors are named by the model's output keys (``closest_cluster``,
``predicted_label``, ``probabilities``, ``contributions``, ...), except the plain prediction
``score``, which is ``predict`` here: the name MLServer's XGBoost and scikit-learn runtimes give
their prediction, so clients written against them keep working (``score`` is accepted too).
Without ``outputs`` a request gets the model's default outputs (SAGEMAKER_INFERENCE_OUTPUT's
keys, or the algorithm's default), in the order the model writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from smserve.errors import InvalidInput
from smserve.service import InferenceService
from smserve.v2.datatypes import datatype_of

PROTOCOL_NAMES: Mapping[str, str] = {"score": "predict"}  # model key -> V2 name
_KEYS: Mapping[str, str] = {name: key for key, name in PROTOCOL_NAMES.items()}


class Spec(Protocol):
    """One output's element type and shape per row (``smserve.types.OutputSpec``)."""

    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...


def protocol_name(key: str) -> str:
    return PROTOCOL_NAMES.get(key, key)


def known_keys(service: InferenceService, specs: Mapping[str, Spec]) -> tuple[str, ...]:
    """Every key a request may name: the described outputs, then any other selectable key."""
    return tuple(dict.fromkeys((*specs, *service.output_keys)))


def selected_keys(names: Sequence[str], known: Sequence[str]) -> tuple[str, ...]:
    """The model keys of the requested output ``names``; raises InvalidInput for a name the
    model cannot produce, listing the ones it can."""
    keys = tuple(_KEYS.get(name, name) for name in names)
    unknown = [name for name, key in zip(names, keys, strict=True) if key not in known]
    if unknown:
        offered = ", ".join(protocol_name(key) for key in known)
        raise InvalidInput(
            f"unknown output {', '.join(repr(n) for n in unknown)}: this model's outputs "
            f"are {offered}"
        )
    return keys


def output_metadata(specs: Mapping[str, Spec]) -> list[dict[str, Any]]:
    """``$metadata_tensor`` for every output, with -1 for the batch dimension."""
    return [
        {
            "name": protocol_name(key),
            "datatype": datatype_of(spec.dtype),
            "shape": [-1, *spec.shape],
        }
        for key, spec in specs.items()
    ]
