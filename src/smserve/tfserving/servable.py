"""A loaded Algorithm as TF Serving sees it: synthesized signatures, the tf.Example feature
names of its columns, and how classify and regress read its outputs.

Signatures (``/metadata`` lists them):

* ``serving_default`` (predict): input ``inputs`` DT_FLOAT ``[-1, n_features]``; outputs are
  the algorithm's own outputs, names and dtypes as ``/invocations`` returns them (k-means:
  ``closest_cluster``, ``distance_to_cluster``; XGBoost: ``score``, or the outputs chosen by
  SAGEMAKER_INFERENCE_OUTPUT), as the repository describes them (``ServedModel.outputs``).
* ``classification`` (classify): input ``inputs`` DT_STRING of unknown rank (tf.Examples);
  outputs ``classes`` DT_STRING and ``scores`` DT_FLOAT, both ``[-1, k]``; offered as the
  algorithm declares (``Algorithm.capabilities``: how its outputs score classes):
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

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from smserve.algorithms.base import Algorithm, Capabilities, Scores, default_feature_names
from smserve.repository.loading import ServedModel
from smserve.tfserving import signatures as sigs
from smserve.types import OutputSpec, Prediction

Classifier = Callable[[Prediction], tuple[np.ndarray, np.ndarray]]  # labels, scores (n, k)
Regressor = Callable[[Prediction], np.ndarray]  # values (n,)

_EXAMPLES = sigs.TensorSpec("DT_STRING", None, "tf_example:0")
EXPLANATIONS = ("contributions", "approximate_contributions")
Specs = Mapping[str, OutputSpec]


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


_SERVABLES: weakref.WeakKeyDictionary[ServedModel, Servable] = weakref.WeakKeyDictionary()


def servable_of(served: ServedModel) -> Servable:
    """``served`` as TF Serving sees it, built on first use and kept while it is served."""
    servable = _SERVABLES.get(served)
    if servable is None:
        servable = _SERVABLES.setdefault(served, build_servable(served))
    return servable


def build_servable(served: ServedModel) -> Servable:
    """Synthesize the signatures of ``served`` from the outputs it declares."""
    algorithm = served.algorithm
    defaults = _default_specs(served)
    names = _feature_names(algorithm)
    capabilities = algorithm.capabilities
    classifier = _classifier(capabilities, defaults) if names else None
    regressor = _regressor(capabilities, defaults) if names else None
    signatures = {sigs.DEFAULT_SIGNATURE: _predict_signature(algorithm, defaults)}
    if classifier is not None:
        signatures[sigs.CLASSIFY_SIGNATURE] = _classify_signature(_classes(capabilities, defaults))
    if regressor is not None:
        signatures[sigs.REGRESS_SIGNATURE] = _regress_signature()
    keys = _explain_keys(served, defaults)
    if not keys:
        return Servable(algorithm, signatures, names, classifier, regressor)
    explained = {key: served.outputs[key] for key in keys}
    signatures[sigs.EXPLAIN_SIGNATURE] = _predict_signature(algorithm, explained)
    explain = {sigs.EXPLAIN_SIGNATURE: keys}
    return Servable(algorithm, signatures, names, classifier, regressor, explain)


def _default_specs(served: ServedModel) -> Specs:
    """The outputs a request without a signature's keys gets (the endpoint's)."""
    defaults = served.service.applied(None)
    if defaults is None:  # outputs fixed: the algorithm declares only those
        return served.outputs
    return {key: served.outputs[key] for key in defaults if key in served.outputs}


def _explain_keys(served: ServedModel, defaults: Specs) -> tuple[str, ...]:
    """The default outputs plus the explanations, for an algorithm that offers them."""
    offered = tuple(k for k in EXPLANATIONS if k in served.service.output_keys)
    if not offered or not all(k in served.outputs for k in offered):
        return ()
    return tuple(dict.fromkeys((*defaults, *offered)))


def _feature_names(algorithm: Algorithm) -> tuple[str, ...] | None:
    """The model's own names, else XGBoost's ``f0``.. for each of its columns."""
    names = algorithm.feature_names or default_feature_names(algorithm.n_features)
    return names or None


def _predict_signature(algorithm: Algorithm, outputs: Specs) -> sigs.Signature:
    width = algorithm.n_features if algorithm.n_features is not None else -1
    inputs = {"inputs": sigs.TensorSpec("DT_FLOAT", (-1, width), "inputs:0")}
    specs = {name: sigs.output_spec(name, spec) for name, spec in outputs.items()}
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


def _output(outputs: Specs, keys: tuple[str, ...], ndim: int) -> str | None:
    """The first of ``keys`` among the outputs with ``ndim`` dimensions (the row's included)."""
    return next((k for k in keys if k in outputs and len(outputs[k].shape) + 1 == ndim), None)


def _classes(capabilities: Capabilities, outputs: Specs) -> int:
    """How many (class, score) pairs classify gives per example."""
    if capabilities.scores is Scores.DISTANCE:
        return 1
    if capabilities.scores is Scores.PROBABILITY:
        return 2
    key = _output(outputs, ("score", "probabilities"), 2)
    return outputs[key].shape[0] if key is not None else len(capabilities.class_labels)


def _classifier(capabilities: Capabilities, outputs: Specs) -> Classifier | None:
    if capabilities.scores is Scores.DISTANCE:
        return _nearest_classifier(outputs)
    if capabilities.scores is Scores.PROBABILITY:
        return _binary_classifier(outputs, capabilities.class_labels)
    if capabilities.scores is Scores.PROBABILITIES:
        return _multiclass_classifier(outputs)
    return None


def _nearest_classifier(outputs: Specs) -> Classifier | None:
    if {"closest_cluster", "distance_to_cluster"} - set(outputs):
        return None

    def classify(prediction: Prediction) -> tuple[np.ndarray, np.ndarray]:
        closest = prediction.outputs["closest_cluster"].astype(np.int64)
        distance = prediction.outputs["distance_to_cluster"].astype(np.float32)
        return closest.astype(np.str_)[:, np.newaxis], -distance[:, np.newaxis]

    return classify


def _binary_classifier(outputs: Specs, labels: tuple[str, ...]) -> Classifier | None:
    both = _output(outputs, ("probabilities",), 2)
    positive = _output(outputs, ("score", "probability"), 1)
    if both is None and positive is None:
        return None
    classes = np.array(labels)

    def classify(prediction: Prediction) -> tuple[np.ndarray, np.ndarray]:
        if both is not None:
            scores = prediction.outputs[both].astype(np.float32)
        else:
            assert positive is not None
            p = prediction.outputs[positive].astype(np.float32)
            scores = np.stack((1.0 - p, p), axis=1)
        return np.broadcast_to(classes, scores.shape), scores

    return classify


def _multiclass_classifier(outputs: Specs) -> Classifier | None:
    key = _output(outputs, ("score", "probabilities"), 2)
    if key is None:
        return None

    def classify(prediction: Prediction) -> tuple[np.ndarray, np.ndarray]:
        scores = prediction.outputs[key].astype(np.float32)
        labels = np.arange(scores.shape[1]).astype(np.str_)
        return np.broadcast_to(labels, scores.shape), scores

    return classify


def _regressor(capabilities: Capabilities, outputs: Specs) -> Regressor | None:
    key = _output(outputs, ("score", "predicted_score"), 1)
    if not capabilities.regression or key is None:
        return None
    return lambda prediction: prediction.outputs[key].astype(np.float32)
