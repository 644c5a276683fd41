"""Selectable XGBoost output: validity per objective, value semantics, key order, and the
startup errors. Expected values are derived here from Booster.predict, independently."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.errors import ModelLoadError
from smserve.types import Batch

Trainer = Callable[..., xgb.Booster]
Loader = Callable[..., XGBoost]
Saver = Callable[..., Path]

# Deliberately not the canonical order: outputs must follow the setting.
ALL_KEYS = (
    "raw_scores",
    "predicted_label",
    "probabilities",
    "labels",
    "predicted_score",
    "raw_score",
    "probability",
)


def expected_outputs(objective: str, booster: xgb.Booster, x: np.ndarray) -> dict[str, object]:
    """The documented value of each valid key (None: not valid, so NaN)."""
    r = booster.predict(xgb.DMatrix(x))
    n = x.shape[0]
    binary_labels = np.tile([0, 1], (n, 1))
    multi_labels = np.tile([0, 1, 2], (n, 1))
    both = np.column_stack([1 - r, r]) if r.ndim == 1 else None
    tables: dict[str, dict[str, object]] = {
        "binary:logistic": {
            "predicted_label": (r > 0.5).astype(int),
            "labels": binary_labels,
            "probability": r,
            "probabilities": both,
            "raw_score": r,
            "raw_scores": both,
        },
        "binary:logitraw": {
            "predicted_label": (r > 0).astype(int),
            "labels": binary_labels,
            "raw_score": r,
            "raw_scores": both,
        },
        "binary:hinge": {
            "predicted_label": r,
            "labels": binary_labels,
            "raw_score": r,
            "raw_scores": both,
        },
        "multi:softmax": {
            "predicted_label": r,
            "labels": multi_labels,
            "raw_score": r,
            "raw_scores": booster.predict(xgb.DMatrix(x), output_margin=True),
        },
        "multi:softprob": {
            "predicted_label": r.argmax(axis=1) if r.ndim == 2 else None,
            "labels": multi_labels,
            "probability": r.max(axis=1) if r.ndim == 2 else None,
            "probabilities": r,
            "raw_score": r.max(axis=1) if r.ndim == 2 else None,
            "raw_scores": r,
        },
        "reg:squarederror": {"predicted_score": r},
    }
    return tables[objective]


@pytest.mark.parametrize(
    "objective",
    [
        "binary:logistic",
        "binary:logitraw",
        "binary:hinge",
        "multi:softmax",
        "multi:softprob",
        "reg:squarederror",
    ],
)
def test_every_key_per_objective(
    tmp_path: Path,
    save: Saver,
    train: Trainer,
    load_xgboost: Loader,
    model_features: np.ndarray,
    objective: str,
) -> None:
    booster = train(objective)
    save(booster, tmp_path)
    x = model_features[:12]
    prediction = load_xgboost(tmp_path, inference_output=ALL_KEYS).predict(Batch(x))
    assert prediction.names == ALL_KEYS
    expected = expected_outputs(objective, booster, x)
    for key, values in prediction.items():
        assert values.shape[0] == 12
        if key in expected:
            np.testing.assert_allclose(values, expected[key], rtol=1e-6, err_msg=key)
        else:
            assert values.dtype == np.float32
            assert np.isnan(values).all(), key


@pytest.mark.parametrize(
    ("objective", "label_dtype"),
    [
        ("binary:logistic", np.int64),
        ("binary:logitraw", np.int64),
        ("multi:softprob", np.int64),
        ("binary:hinge", np.float32),
        ("multi:softmax", np.float32),
    ],
)
def test_output_dtypes(
    tmp_path: Path,
    save: Saver,
    train: Trainer,
    load_xgboost: Loader,
    model_features: np.ndarray,
    objective: str,
    label_dtype: type,
) -> None:
    save(train(objective), tmp_path)
    keys = ("predicted_label", "labels", "raw_scores")
    outputs = load_xgboost(tmp_path, inference_output=keys).predict(Batch(model_features)).outputs
    assert outputs["predicted_label"].dtype == label_dtype
    assert outputs["labels"].dtype == np.int64
    assert outputs["raw_scores"].dtype == np.float32
    for values in outputs.values():
        assert values.flags.c_contiguous


def test_softmax_raw_scores_are_class_margins(
    tmp_path: Path,
    save: Saver,
    train: Trainer,
    load_xgboost: Loader,
    model_features: np.ndarray,
) -> None:
    booster = train("multi:softmax")
    save(booster, tmp_path)
    keys = ("predicted_label", "raw_scores")
    outputs = load_xgboost(tmp_path, inference_output=keys).predict(Batch(model_features)).outputs
    assert outputs["raw_scores"].shape == (60, 3)
    np.testing.assert_array_equal(outputs["raw_scores"].argmax(axis=1), outputs["predicted_label"])


def test_probabilities_for_binary_logistic_sum_to_one(
    xgb_binary_dir: Path, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    algorithm = load_xgboost(xgb_binary_dir, inference_output=("probabilities",))
    probabilities = algorithm.predict(Batch(model_features)).outputs["probabilities"]
    assert probabilities.shape == (60, 2)
    assert probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-6)


def test_softmax_ensemble_averages_margins_and_votes_labels(
    tmp_path: Path,
    save: Saver,
    train: Trainer,
    load_xgboost: Loader,
    model_features: np.ndarray,
) -> None:
    boosters = [train("multi:softmax", rounds=r) for r in (2, 4, 6)]
    for i, booster in enumerate(boosters):
        save(booster, tmp_path, f"xgboost-model-{i}")
    keys = ("predicted_label", "raw_scores")
    outputs = load_xgboost(tmp_path, inference_output=keys).predict(Batch(model_features)).outputs
    margins = [b.predict(xgb.DMatrix(model_features), output_margin=True) for b in boosters]
    np.testing.assert_allclose(outputs["raw_scores"], np.mean(margins, axis=0), rtol=1e-6)
    labels = np.stack([b.predict(xgb.DMatrix(model_features)) for b in boosters])
    assert set(np.unique(outputs["predicted_label"])) <= set(np.unique(labels))


def test_invalid_keys_warn_once_at_load(
    xgb_regression_dir: Path, load_xgboost: Loader, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        algorithm = load_xgboost(xgb_regression_dir, inference_output=("probability", "labels"))
    warnings = [r for r in caplog.records if "probability, labels" in r.getMessage()]
    assert len(warnings) == 1
    caplog.clear()
    algorithm.predict(Batch(np.zeros((2, 4), dtype=np.float32)))
    assert not caplog.records


def test_repeated_keys_appear_once(xgb_binary_dir: Path, load_xgboost: Loader) -> None:
    keys = ("probability", "predicted_label", "probability")
    algorithm = load_xgboost(xgb_binary_dir, inference_output=keys)
    prediction = algorithm.predict(Batch(np.zeros((1, 4), dtype=np.float32)))
    assert prediction.names == ("probability", "predicted_label")


def test_unknown_key_is_a_startup_error(xgb_binary_dir: Path, load_xgboost: Loader) -> None:
    with pytest.raises(ModelLoadError, match="unknown outputs: confidence"):
        load_xgboost(xgb_binary_dir, inference_output=("probability", "confidence"))


@pytest.mark.parametrize("objective", ["rank:pairwise", "count:poisson", "survival:cox"])
def test_objective_without_selectable_output_is_a_startup_error(
    tmp_path: Path, save: Saver, train: Trainer, load_xgboost: Loader, objective: str
) -> None:
    save(train(objective), tmp_path)
    with pytest.raises(ModelLoadError, match=f"objective {objective} has no selectable output"):
        load_xgboost(tmp_path, inference_output=("predicted_score",))


def test_multi_target_model_is_a_startup_error(
    tmp_path: Path,
    save: Saver,
    train: Trainer,
    load_xgboost: Loader,
    model_features: np.ndarray,
) -> None:
    targets = np.column_stack([model_features[:, 0], model_features[:, 1]])
    save(train("reg:squarederror", labels=targets), tmp_path)
    assert load_xgboost(tmp_path).predict(Batch(model_features)).outputs["score"].shape == (60, 2)
    with pytest.raises(ModelLoadError, match="single-target"):
        load_xgboost(tmp_path, inference_output=("predicted_score",))


def test_empty_batch_keeps_the_output_widths(
    xgb_multiclass_dir: Path, load_xgboost: Loader
) -> None:
    algorithm = load_xgboost(xgb_multiclass_dir, inference_output=("predicted_label", "labels"))
    outputs = algorithm.predict(Batch(np.zeros((0, 4), dtype=np.float32))).outputs
    assert outputs["predicted_label"].shape == (0,)
    assert outputs["labels"].shape == (0, 3)
    score = load_xgboost(xgb_multiclass_dir).predict(Batch(np.zeros((0, 4), dtype=np.float32)))
    assert score.outputs["score"].shape == (0, 3)
