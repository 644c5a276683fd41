"""The Algorithm protocol every model kind implements (one module per algorithm)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from smserve.types import Batch, Prediction


class Scores(enum.Enum):
    """How a model's default outputs score classes, for doors with a classify view."""

    PROBABILITY = "probability"  # one probability per row, of the second class label
    PROBABILITIES = "probabilities"  # one probability per class, in class label order
    DISTANCE = "distance"  # the closest cluster and the distance to it (lower is closer)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a model can answer besides its raw outputs, declared by the algorithm so that no
    door needs to know which algorithm it serves.

    scores : how the default outputs score classes; None when they do not (regression, or a
        model that only outputs a class label).
    class_labels : the class names, in score order (empty unless ``scores`` is a probability).
    regression : the default output is one number per row that is not a class label.
    """

    scores: Scores | None = None
    class_labels: tuple[str, ...] = ()
    regression: bool = False


NO_CAPABILITIES = Capabilities()


@runtime_checkable
class Algorithm(Protocol):
    """A loaded model. ``predict`` is pure (no I/O, no logging per row) and validates the
    batch's column count itself, raising InvalidInput (400) that names both counts."""

    name: ClassVar[str]
    default_content_type: ClassVar[str]  # used when a request has no Content-Type
    default_accept: ClassVar[str]  # used when Accept is missing or */*

    @property
    def n_features(self) -> int | None:
        """Columns the model expects; None when the artifact does not say."""
        ...

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The model's own names, one per column in column order, as its artifact records
        them (even when they read ``f0``, ``f1``, ...); () when it records none. A model with
        names has named tables read by name; one without reads them by position."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What the model can answer besides its outputs (classification, regression)."""
        ...

    def predict(self, batch: Batch) -> Prediction: ...


@runtime_checkable
class SelectableOutputs(Protocol):
    """An Algorithm whose outputs a request may choose (SageMaker CustomAttributes
    ``outputs=<key>,<key>``), overriding the endpoint's default for that request."""

    @property
    def output_keys(self) -> tuple[str, ...]:
        """Every key this model can produce."""
        ...

    @property
    def default_outputs(self) -> tuple[str, ...]:
        """The endpoint's keys: SAGEMAKER_INFERENCE_OUTPUT's, else the algorithm's default."""
        ...

    @property
    def wide_outputs(self) -> frozenset[str]:
        """The keys of ``output_keys`` with one value per feature per row (explanations):
        answers that cost about as much to write as text as to predict."""
        ...

    def predict(
        self, batch: Batch, outputs: tuple[str, ...] | None = None, spare_cpu: bool = False
    ) -> Prediction:
        """``outputs`` (distinct keys of ``output_keys``, in order), or the default ones.
        ``spare_cpu``: another thread of the request is busy meanwhile (writing an earlier
        chunk, or predicting one); leave it a CPU where that is cheaper than sharing."""
        ...


def default_feature_names(n_features: int | None) -> tuple[str, ...]:
    """``("f0", ..., "f{n-1}")``, XGBoost's names for unnamed columns, which TF Serving's
    metadata and tf.Example features use for a model without names; () when n is unknown."""
    return tuple(f"f{i}" for i in range(n_features or 0))
