"""A loaded Algorithm as TF Serving sees it: synthesized signatures, the tf.Example feature
names of its columns, and how classify and regress read its outputs.

Signatures (``/metadata`` lists them):

* ``serving_default`` (predict): input ``inputs`` DT_FLOAT ``[-1, n_features]``; outputs are
  the algorithm's own outputs, names and dtypes as ``/invocations`` returns them (k-means:
  ``closest_cluster``, ``distance_to_cluster``; XGBoost: ``score``, or the outputs chosen by
  SAGEMAKER_INFERENCE_OUTPUT). They are learned by predicting one all-zero row at load.
* ``classification`` (classify): input ``inputs`` DT_STRING of unknown rank (tf.Examples);
  outputs ``classes`` DT_STRING and ``scores`` DT_FLOAT, both ``[-1, k]``.
  - XGBoost ``binary:logistic``: classes ``"0"``, ``"1"``; scores ``1-p``, ``p``.
  - XGBoost ``multi:softprob``: classes ``"0"``..``"k-1"``; scores the class probabilities.
  - k-means: one pair per example: the closest cluster's index as a string, scored with the
    negated distance to it (higher is closer, as a score should be).
* ``regression`` (regress): output ``outputs`` DT_FLOAT ``[-1]``; XGBoost models whose
  prediction is one number per row that is not a class label (regression objectives, or
  binary:logistic's probability).
* ``explain`` (predict, same input as ``serving_default``): the default outputs plus the
  explanations the algorithm offers (``contributions``, and XGBoost's
  ``approximate_contributions``), for algorithms with selectable outputs. The metadata then
  also lists ``feature_names``, the labels of a contribution vector (the bias follows them).

tf.Example feature names: the booster's feature names when it has them, else ``f0``..``f{n-1}``
(XGBoost's own default names; k-means uses the same scheme).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from smserve.algorithms.base import Algorithm, SelectableOutputs
from smserve.tfserving import signatures as sigs
from smserve.types import Batch, Prediction

logger = logging.getLogger(__name__)

Classifier = Callable[[Prediction], tuple[np.ndarray, np.ndarray]]  # labels, scores (n, k)
Regressor = Callable[[Prediction], np.ndarray]  # values (n,)

_EXAMPLES = sigs.TensorSpec("DT_STRING", None, "tf_example:0")
_BINARY = np.array(["0", "1"])
_LABEL_OBJECTIVES = ("multi:", "binary:hinge")  # their one number per row is a class label
EXPLANATIONS = ("contributions", "approximate_contributions")


@dataclass(frozen=True)
class Servable:
    """Everything the TF Serving API needs from one loaded model version."""

    algorithm: Algorithm
    signatures: Mapping[str, sigs.Signature]
    feature_names: tuple[str, ...] | None
    classifier: Classifier | None = None
    regressor: Regressor | None = None
    outputs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # keys per signature
    feature_index: Mapping[str, int] = field(init=False)

    def __post_init__(self) -> None:
        names = self.feature_names or ()
        object.__setattr__(self, "feature_index", {n: i for i, n in enumerate(names)})


def build_servable(algorithm: Algorithm) -> Servable:
    """Synthesize ``algorithm``'s signatures (predicts one zero row when its width is known)."""
    outputs = _probe(algorithm)
    names = _feature_names(algorithm)
    classifier = _classifier(algorithm, outputs) if names else None
    regressor = _regressor(algorithm, outputs) if names else None
    signatures = {sigs.DEFAULT_SIGNATURE: _predict_signature(algorithm, outputs)}
    if classifier is not None:
        k = classifier(outputs)[0].shape[1]
        signatures[sigs.CLASSIFY_SIGNATURE] = _classify_signature(k)
    if regressor is not None:
        signatures[sigs.REGRESS_SIGNATURE] = _regress_signature()
    keys = _explain_keys(algorithm)
    explained = _probe(algorithm, keys) if keys else Prediction({})
    if not explained.outputs:
        return Servable(algorithm, signatures, names, classifier, regressor)
    signatures[sigs.EXPLAIN_SIGNATURE] = _predict_signature(algorithm, explained)
    explain = {sigs.EXPLAIN_SIGNATURE: keys}
    return Servable(algorithm, signatures, names, classifier, regressor, explain)


def _explain_keys(algorithm: Algorithm) -> tuple[str, ...]:
    """The default outputs plus the explanations, for an algorithm that offers them."""
    if not isinstance(algorithm, SelectableOutputs):
        return ()
    offered = tuple(k for k in EXPLANATIONS if k in algorithm.output_keys)
    return tuple(dict.fromkeys((*algorithm.default_outputs, *offered))) if offered else ()


def _probe(algorithm: Algorithm, keys: tuple[str, ...] = ()) -> Prediction:
    n = algorithm.n_features
    if n is None:
        return Prediction({})
    try:
        batch = Batch(np.zeros((1, n), dtype=np.float32))
        if keys and isinstance(algorithm, SelectableOutputs):
            return algorithm.predict(batch, keys)
        return algorithm.predict(batch)
    except Exception:  # a model that cannot score zeros still serves; it only lacks metadata
        logger.warning("could not learn the outputs of the %s model", algorithm.name, exc_info=True)
        return Prediction({})


def _feature_names(algorithm: Algorithm) -> tuple[str, ...] | None:
    names: tuple[str, ...] | None = getattr(algorithm, "feature_names", None)
    if names:
        return tuple(names)
    n = algorithm.n_features
    return None if n is None else tuple(f"f{i}" for i in range(n))


def _predict_signature(algorithm: Algorithm, outputs: Prediction) -> sigs.Signature:
    width = algorithm.n_features if algorithm.n_features is not None else -1
    inputs = {"inputs": sigs.TensorSpec("DT_FLOAT", (-1, width), "inputs:0")}
    specs = {name: sigs.output_spec(name, array) for name, array in outputs.items()}
    return sigs.Signature(sigs.PREDICT_METHOD, inputs, specs)


def _classify_signature(k: int) -> sigs.Signature:
    outputs = {
        "classes": sigs.TensorSpec("DT_STRING", (-1, k), "classes:0"),
        "scores": sigs.TensorSpec("DT_FLOAT", (-1, k), "scores:0"),
    }
    return sigs.Signature(sigs.CLASSIFY_METHOD, {"inputs": _EXAMPLES}, outputs)


def _regress_signature() -> sigs.Signature:
    outputs = {"outputs": sigs.TensorSpec("DT_FLOAT", (-1,), "outputs:0")}
    return sigs.Signature(sigs.REGRESS_METHOD, {"inputs": _EXAMPLES}, outputs)


def _output(prediction: Prediction, keys: tuple[str, ...], ndim: int) -> str | None:
    """The first of ``keys`` present among the outputs with ``ndim`` dimensions."""
    return next((k for k in keys if k in prediction.outputs and _ndim(prediction, k) == ndim), None)


def _ndim(prediction: Prediction, key: str) -> int:
    return int(prediction.outputs[key].ndim)


def _classifier(algorithm: Algorithm, outputs: Prediction) -> Classifier | None:
    if algorithm.name == "kmeans":
        return _kmeans_classifier(outputs)
    objective = getattr(algorithm, "objective", None)
    if objective == "binary:logistic":
        return _binary_classifier(outputs)
    if objective == "multi:softprob":
        return _multiclass_classifier(outputs)
    return None


def _kmeans_classifier(outputs: Prediction) -> Classifier | None:
    if {"closest_cluster", "distance_to_cluster"} - set(outputs.names):
        return None

    def classify(prediction: Prediction) -> tuple[np.ndarray, np.ndarray]:
        closest = prediction.outputs["closest_cluster"].astype(np.int64)
        distance = prediction.outputs["distance_to_cluster"].astype(np.float32)
        return closest.astype(np.str_)[:, np.newaxis], -distance[:, np.newaxis]

    return classify


def _binary_classifier(outputs: Prediction) -> Classifier | None:
    both = _output(outputs, ("probabilities",), 2)
    positive = _output(outputs, ("score", "probability"), 1)
    if both is None and positive is None:
        return None

    def classify(prediction: Prediction) -> tuple[np.ndarray, np.ndarray]:
        if both is not None:
            scores = prediction.outputs[both].astype(np.float32)
        else:
            assert positive is not None
            p = prediction.outputs[positive].astype(np.float32)
            scores = np.stack((1.0 - p, p), axis=1)
        return np.broadcast_to(_BINARY, scores.shape), scores

    return classify


def _multiclass_classifier(outputs: Prediction) -> Classifier | None:
    key = _output(outputs, ("score", "probabilities"), 2)
    if key is None:
        return None

    def classify(prediction: Prediction) -> tuple[np.ndarray, np.ndarray]:
        scores = prediction.outputs[key].astype(np.float32)
        labels = np.arange(scores.shape[1]).astype(np.str_)
        return np.broadcast_to(labels, scores.shape), scores

    return classify


def _regressor(algorithm: Algorithm, outputs: Prediction) -> Regressor | None:
    objective = str(getattr(algorithm, "objective", ""))
    key = _output(outputs, ("score", "predicted_score"), 1)
    if algorithm.name != "xgboost" or key is None or objective.startswith(_LABEL_OBJECTIVES):
        return None
    return lambda prediction: prediction.outputs[key].astype(np.float32)
