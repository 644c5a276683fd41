"""Selectable XGBoost output (``SAGEMAKER_INFERENCE_OUTPUT``, or per request): which keys
each objective supports and how each is derived from the raw prediction. The endpoint's keys
are validated once, at load; a request's keys by the service, against ``available_keys``.

``score`` (the plain prediction) and the explanations (``contributions``: exact TreeSHAP,
``approximate_contributions``: XGBoost's approximation, computed in ``xgboost.explain``) are
available for every objective; the other keys only for the objectives in ``PRODUCERS``.

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
EXPLANATIONS = ("contributions", "approximate_contributions")
ALWAYS = ("score", *EXPLANATIONS)  # keys every objective has


@dataclass(frozen=True, slots=True)
class Raw:
    """One batch's raw predictions.

    value : ndarray of shape (n_rows,), or (n_rows, num_class) for multi:softprob, float32;
        only when the plan needs it
    margin : ndarray of shape (n_rows, num_class), float32; only when the plan needs it
    """

    value: np.ndarray | None
    margin: np.ndarray | None
    num_class: int

    @property
    def values(self) -> np.ndarray:
        assert self.value is not None, "the plan asks for values when it needs them"
        return self.value


Producer = Callable[[Raw], np.ndarray]


def _as_is(raw: Raw) -> np.ndarray:
    return raw.values


def _above(threshold: float) -> Producer:
    return lambda raw: (raw.values > threshold).astype(np.int64)


def _argmax(raw: Raw) -> np.ndarray:
    return np.asarray(raw.values.argmax(axis=1), dtype=np.int64)


def _row_max(raw: Raw) -> np.ndarray:
    return np.asarray(raw.values.max(axis=1))


def _both_classes(raw: Raw) -> np.ndarray:
    return np.stack((1.0 - raw.values, raw.values), axis=1)


def _class_labels(n_classes: int | None) -> Producer:
    def labels(raw: Raw) -> np.ndarray:
        k = raw.num_class if n_classes is None else n_classes
        return np.tile(np.arange(k, dtype=np.int64), (raw.values.shape[0], 1))

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
    """The requested keys, in order, a producer for each value-derived key the objective
    fills, and the explanation keys (filled by the caller, see ``outputs``)."""

    keys: tuple[str, ...]
    producers: Mapping[str, Producer]
    explain: tuple[str, ...] = ()

    @property
    def needs_value(self) -> bool:
        return any(producer is not _margins for producer in self.producers.values())

    @property
    def needs_margin(self) -> bool:
        return any(producer is _margins for producer in self.producers.values())

    @classmethod
    def build(cls, keys: tuple[str, ...], objective: str, num_target: int) -> OutputPlan:
        """The endpoint's plan (SAGEMAKER_INFERENCE_OUTPUT). Raises ModelLoadError for unknown
        keys, or keys other than ``ALWAYS`` for an objective without selectable output or a
        multi-target model; logs one warning for keys the objective cannot fill (NaN)."""
        keys = tuple(dict.fromkeys(keys))
        _check_keys(keys)
        table = _table_for(objective, num_target) if set(keys) - set(ALWAYS) else {}
        invalid = [k for k in keys if k not in table and k not in ALWAYS]
        if invalid:
            logger.warning(
                "SAGEMAKER_INFERENCE_OUTPUT: %s not available for objective %s; "
                "they will be null (NaN)",
                ", ".join(invalid),
                objective,
            )
        return cls.of(keys, table)

    @classmethod
    def of(cls, keys: tuple[str, ...], table: Mapping[str, Producer]) -> OutputPlan:
        """The plan for ``keys`` (distinct) given the objective's ``table``; keys in neither
        ``table`` nor ``ALWAYS`` are written as NaN."""
        producers = {
            k: _as_is if k == "score" else table[k] for k in keys if k in table or k == "score"
        }
        return cls(keys, producers, tuple(k for k in keys if k in EXPLANATIONS))

    def outputs(self, raw: Raw, explained: Mapping[str, np.ndarray], n_rows: int) -> Prediction:
        """The selected outputs for one batch, keyed and ordered as requested; ``explained``
        holds the arrays of the ``explain`` keys."""
        missing = np.full(n_rows, np.nan, dtype=np.float32)
        arrays = {
            key: np.ascontiguousarray(self.producers[key](raw))
            if key in self.producers
            else explained.get(key, missing)
            for key in self.keys
        }
        return Prediction(arrays, columns=self.explain)


def available_keys(objective: str, num_target: int) -> tuple[str, ...]:
    """Every key a request may select for this model: ``score``, the objective's keys (in
    KEYS order), then the explanations."""
    return ("score", *request_table(objective, num_target), *EXPLANATIONS)


def request_table(objective: str, num_target: int) -> Mapping[str, Producer]:
    """The producers a request may use: none for objectives without selectable output."""
    return PRODUCERS.get(objective, {}) if num_target == 1 else {}


def _check_keys(keys: tuple[str, ...]) -> None:
    unknown = [k for k in keys if k not in KEYS and k not in ALWAYS]
    if unknown:
        raise ModelLoadError(
            f"SAGEMAKER_INFERENCE_OUTPUT names unknown outputs: {', '.join(unknown)}; "
            f"valid outputs: {', '.join((*KEYS, *ALWAYS))}"
        )


def _table_for(objective: str, num_target: int) -> Mapping[str, Producer]:
    table = PRODUCERS.get(objective)
    if table is None:
        raise ModelLoadError(
            f"SAGEMAKER_INFERENCE_OUTPUT: the model's objective {objective} has no selectable "
            f"output other than {', '.join(ALWAYS)}; supported objectives: {', '.join(PRODUCERS)}"
        )
    if num_target > 1:
        raise ModelLoadError(
            f"SAGEMAKER_INFERENCE_OUTPUT: outputs other than {', '.join(ALWAYS)} need a "
            f"single-target model; this one has {num_target}"
        )
    return table
