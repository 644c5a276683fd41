"""Selectable XGBoost output (``SAGEMAKER_INFERENCE_OUTPUT``): which keys each objective
supports and how each is derived from the raw prediction. Validated once, at load.

Differences from the built-in container, on purpose: outputs come in the order the setting
lists them; ``raw_scores`` for ``multi:softmax`` are the per-class margins, not ``[1-r, r]``;
``predicted_label`` is an integer array when it comes from a threshold or an argmax.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from smserve.errors import ModelLoadError
from smserve.types import Prediction

logger = logging.getLogger(__name__)

KEYS = (
    "predicted_label",
    "labels",
    "probability",
    "probabilities",
    "raw_score",
    "raw_scores",
    "predicted_score",
)


@dataclass(frozen=True, slots=True)
class Raw:
    """One batch's raw predictions.

    value : ndarray of shape (n_rows,), or (n_rows, num_class) for multi:softprob, float32
    margin : ndarray of shape (n_rows, num_class), float32; only when the plan needs it
    """

    value: np.ndarray
    margin: np.ndarray | None
    num_class: int


Producer = Callable[[Raw], np.ndarray]


def _as_is(raw: Raw) -> np.ndarray:
    return raw.value


def _above(threshold: float) -> Producer:
    return lambda raw: (raw.value > threshold).astype(np.int64)


def _argmax(raw: Raw) -> np.ndarray:
    return np.asarray(raw.value.argmax(axis=1), dtype=np.int64)


def _row_max(raw: Raw) -> np.ndarray:
    return np.asarray(raw.value.max(axis=1))


def _both_classes(raw: Raw) -> np.ndarray:
    return np.stack((1.0 - raw.value, raw.value), axis=1)


def _class_labels(n_classes: int | None) -> Producer:
    def labels(raw: Raw) -> np.ndarray:
        k = raw.num_class if n_classes is None else n_classes
        return np.tile(np.arange(k, dtype=np.int64), (raw.value.shape[0], 1))

    return labels


def _margins(raw: Raw) -> np.ndarray:
    assert raw.margin is not None, "the plan asks for margins when it needs them"
    return raw.margin


_REGRESSION: Mapping[str, Producer] = {"predicted_score": _as_is}
PRODUCERS: Mapping[str, Mapping[str, Producer]] = {
    "binary:logistic": {
        "predicted_label": _above(0.5),
        "labels": _class_labels(2),
        "probability": _as_is,
        "probabilities": _both_classes,
        "raw_score": _as_is,
        "raw_scores": _both_classes,
    },
    "binary:logitraw": {
        "predicted_label": _above(0.0),
        "labels": _class_labels(2),
        "raw_score": _as_is,
        "raw_scores": _both_classes,
    },
    "binary:hinge": {
        "predicted_label": _as_is,
        "labels": _class_labels(2),
        "raw_score": _as_is,
        "raw_scores": _both_classes,
    },
    "multi:softmax": {
        "predicted_label": _as_is,
        "labels": _class_labels(None),
        "raw_score": _as_is,
        "raw_scores": _margins,
    },
    "multi:softprob": {
        "predicted_label": _argmax,
        "labels": _class_labels(None),
        "probability": _row_max,
        "probabilities": _as_is,
        "raw_score": _row_max,
        "raw_scores": _as_is,
    },
    **dict.fromkeys(
        ("reg:squarederror", "reg:logistic", "reg:gamma", "reg:absoluteerror", "reg:tweedie"),
        _REGRESSION,
    ),
}


@dataclass(frozen=True, slots=True)
class OutputPlan:
    """The requested keys, in order, and a producer for each key valid for the objective."""

    keys: tuple[str, ...]
    producers: Mapping[str, Producer]
    needs_margin: bool

    @classmethod
    def build(cls, keys: tuple[str, ...], objective: str, num_target: int) -> OutputPlan:
        """Raises ModelLoadError for unknown keys, an objective without selectable output or a
        multi-target model; logs one warning for keys the objective cannot fill (NaN)."""
        keys = tuple(dict.fromkeys(keys))
        _check_keys(keys)
        table = _table_for(objective, num_target)
        invalid = [k for k in keys if k not in table]
        if invalid:
            logger.warning(
                "SAGEMAKER_INFERENCE_OUTPUT: %s not available for objective %s; "
                "they will be null (NaN)",
                ", ".join(invalid),
                objective,
            )
        producers = {k: table[k] for k in keys if k in table}
        return cls(keys, producers, producers.get("raw_scores") is _margins)

    def outputs(self, raw: Raw) -> Prediction:
        """The selected outputs for one batch, keyed and ordered as requested."""
        missing = np.full(raw.value.shape[0], np.nan, dtype=np.float32)
        return Prediction(
            {
                key: np.ascontiguousarray(self.producers[key](raw))
                if key in self.producers
                else missing
                for key in self.keys
            }
        )


def _check_keys(keys: tuple[str, ...]) -> None:
    unknown = [k for k in keys if k not in KEYS]
    if unknown:
        raise ModelLoadError(
            f"SAGEMAKER_INFERENCE_OUTPUT names unknown outputs: {', '.join(unknown)}; "
            f"valid outputs: {', '.join(KEYS)}"
        )


def _table_for(objective: str, num_target: int) -> Mapping[str, Producer]:
    table = PRODUCERS.get(objective)
    if table is None:
        raise ModelLoadError(
            f"SAGEMAKER_INFERENCE_OUTPUT is set, but the model's objective {objective} has no "
            f"selectable output; supported objectives: {', '.join(PRODUCERS)}"
        )
    if num_target > 1:
        raise ModelLoadError(
            f"SAGEMAKER_INFERENCE_OUTPUT needs a single-target model; this one has {num_target}"
        )
    return table
