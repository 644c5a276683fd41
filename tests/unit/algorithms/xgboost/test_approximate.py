"""The vector-leaf approximation gives what XGBoost's ``approx_contribs`` gives (within float32
rounding) for every model kind it covers, dense, missing and sparse alike; declines what it
does not cover; and the algorithm answers XGBoost's values either way."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve.algorithms.xgboost import approximate as xgboost_approximate
from smserve.algorithms.xgboost import direct as xgboost_direct
from smserve.algorithms.xgboost import vector_leaf as xgboost_vector_leaf
from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.algorithms.xgboost.approximate import ApproximateExplainer, LazyApproximation
from smserve.algorithms.xgboost.model import SMALL_BATCH_ROWS
from smserve.types import Batch

Trainer = Callable[..., xgb.Booster]
Served = Callable[[xgb.Booster], XGBoost]
KEY = "approximate_contributions"
ATOL = 2e-6  # float32 sums over a few trees of values of order 1


@pytest.fixture
def rows() -> np.ndarray:
    """200 rows (more than SMALL_BATCH_ROWS) of the fixtures' 4 features, a tenth missing."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    return x


@pytest.fixture
def served(
    save: Callable[..., Path], load_xgboost: Callable[..., XGBoost], tmp_path: Path
) -> Served:
    """``served(booster)``: the algorithm loaded from the booster saved into tmp_path."""

    def serve(booster: xgb.Booster) -> XGBoost:
        save(booster, tmp_path)
        return load_xgboost(tmp_path)

    return serve


def _xgboost_approx(booster: xgb.Booster, x: object, iteration_range=(0, 0)) -> np.ndarray:
    matrix = xgb.DMatrix(x, missing=np.nan)
    return np.asarray(
        booster.predict(
            matrix, pred_contribs=True, approx_contribs=True, iteration_range=iteration_range
        )
    )


def _explainer(booster: xgb.Booster, iteration_range=(0, 0)) -> ApproximateExplainer:
    explainer = ApproximateExplainer.create(booster, iteration_range, nthread=2)
    assert explainer is not None
    return explainer


@pytest.mark.parametrize(
    ("objective", "params"),
    [
        ("binary:logistic", {"base_score": 0.3}),
        ("reg:squarederror", {"base_score": 3.0}),
        ("multi:softprob", {}),
        ("multi:softmax", {}),
        ("rank:pairwise", {}),
        ("count:poisson", {}),
        ("survival:cox", {}),
        ("reg:squarederror", {"num_parallel_tree": 3, "subsample": 0.7}),
        ("binary:logistic", {"grow_policy": "lossguide", "max_leaves": 5, "max_depth": 0}),
        ("binary:logistic", {"tree_method": "exact", "max_depth": 4}),
        ("binary:logistic", {"gamma": 1.0, "max_depth": 5}),
    ],
)
def test_equals_xgboosts_approximation_dense_missing_and_sparse(
    train: Trainer, rows: np.ndarray, objective: str, params: dict[str, object]
) -> None:
    booster = train(objective, rounds=6, **params)
    explainer = _explainer(booster)
    expected = _xgboost_approx(booster, rows)
    got = explainer.explain(rows)
    assert got.shape == expected.shape
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
    csr = sp.csr_matrix(np.nan_to_num(rows, nan=0.0))  # absent entries are missing values
    np.testing.assert_allclose(explainer.explain(csr), _xgboost_approx(booster, csr), atol=ATOL)


def test_only_the_trees_of_the_iteration_range_are_explained(
    train: Trainer, rows: np.ndarray
) -> None:
    booster = train("reg:squarederror", rounds=8, num_parallel_tree=2, subsample=0.8)
    got = _explainer(booster, (0, 3)).explain(rows)
    np.testing.assert_allclose(got, _xgboost_approx(booster, rows, (0, 3)), atol=ATOL)
    assert not np.allclose(got, _xgboost_approx(booster, rows), atol=1e-3)


def test_a_large_batch_through_the_algorithm_uses_it_and_sums_to_the_margin(
    train: Trainer, served: Served, rows: np.ndarray
) -> None:
    booster = train("multi:softprob", rounds=5)
    algorithm = served(booster)
    got = algorithm.predict(Batch(rows), (KEY,)).outputs[KEY]
    [member] = algorithm.members
    assert member.approximation is not None
    assert member.approximation.get() is not None
    assert rows.shape[0] > SMALL_BATCH_ROWS
    np.testing.assert_allclose(got, _xgboost_approx(booster, rows), atol=ATOL)
    margin = booster.predict(xgb.DMatrix(rows), output_margin=True)
    np.testing.assert_allclose(got.sum(axis=2), margin, atol=1e-5)


def test_a_small_batch_gives_xgboosts_own_values_and_agrees_with_a_large_one(
    train: Trainer, served: Served, rows: np.ndarray
) -> None:
    booster = train("binary:logistic", rounds=5)
    algorithm = served(booster)
    small = algorithm.predict(Batch(rows[:3]), (KEY,)).outputs[KEY]
    np.testing.assert_array_equal(small, _xgboost_approx(booster, rows[:3]))
    large = algorithm.predict(Batch(rows), (KEY,)).outputs[KEY]
    np.testing.assert_allclose(large[:3], small, atol=ATOL)


def test_with_a_share_of_two_cpus_single_threaded_copies_explain_the_same_bits(
    train: Trainer, rows: np.ndarray
) -> None:
    booster = train("multi:softprob", rounds=5)
    explainer = _explainer(booster)  # nthread=2
    assert len(explainer.spare) == len(explainer.boosters) == 3  # one per class
    assert all(int(_nthread(copy)) == 1 for copy in explainer.spare)
    for x in (rows, sp.csr_matrix(np.nan_to_num(rows))):
        np.testing.assert_array_equal(explainer.explain(x, spare_cpu=True), explainer.explain(x))
    for nthread in (1, 4):  # none to spare, or one thread fewer would take another copy
        other = ApproximateExplainer.create(booster, (0, 0), nthread)
        assert other is not None
        assert other.spare == ()
        np.testing.assert_array_equal(other.explain(rows, spare_cpu=True), other.explain(rows))


def test_copies_that_explain_differently_are_not_kept(
    train: Trainer, rows: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    explainer = ApproximateExplainer.create(train("binary:logistic", rounds=5), (0, 0), 1)
    assert explainer is not None
    assert explainer.spare == ()
    assert len(explainer.with_spare(rows).spare) == 1  # true copies are kept
    unlike = _explainer(train("binary:logistic", rounds=3)).boosters[0]
    monkeypatch.setattr(xgb.Booster, "copy", lambda self: unlike)
    assert explainer.with_spare(rows).spare == ()


def test_the_c_api_margins_are_inplace_predicts_bits_and_optional(
    train: Trainer, rows: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    booster = train("multi:softprob", rounds=5)
    explainer = _explainer(booster)
    assert explainer.direct is not None
    through_inplace = replace(explainer, direct=None)
    for x in (rows, sp.csr_matrix(np.nan_to_num(rows))):
        for spare_cpu in (False, True):
            np.testing.assert_array_equal(
                explainer.explain(x, spare_cpu), through_inplace.explain(x, spare_cpu)
            )
    monkeypatch.setattr(xgboost_direct, "_AVAILABLE", False)  # another XGBoost layout
    without = _explainer(booster)
    assert without.direct is None
    np.testing.assert_array_equal(without.explain(rows), explainer.explain(rows))


def _nthread(booster: xgb.Booster) -> str:
    config = json.loads(booster.save_config())
    return str(config["learner"]["generic_param"]["nthread"])


def _dart(train: Trainer) -> xgb.Booster:
    return train("binary:logistic", booster="dart", rate_drop=0.3)


def _linear(train: Trainer) -> xgb.Booster:
    x = np.random.default_rng(0).normal(size=(60, 4))
    return xgb.train({"booster": "gblinear"}, xgb.DMatrix(x, x[:, 0]), num_boost_round=2)


def _vector_leaf(train: Trainer) -> xgb.Booster:
    rng = np.random.default_rng(0)
    labels = rng.normal(size=(60, 2))
    params = {"multi_strategy": "multi_output_tree", "tree_method": "hist"}
    return train("reg:squarederror", labels=labels, **params)


@pytest.mark.parametrize("model", [_dart, _linear, _vector_leaf])
def test_models_it_does_not_cover_are_declined(
    train: Trainer, model: Callable[[Trainer], xgb.Booster]
) -> None:
    assert ApproximateExplainer.create(model(train), (0, 0), nthread=1) is None


def test_categorical_splits_are_declined() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(80, 2)).astype(np.float32)
    matrix = xgb.DMatrix(x, x[:, 0] == 2, feature_types=["c", "q"], enable_categorical=True)
    params = {"tree_method": "hist", "max_cat_to_onehot": 1, "objective": "binary:logistic"}
    booster = xgb.train(params, matrix, num_boost_round=3)
    assert ApproximateExplainer.create(booster, (0, 0), nthread=1) is None


def test_a_model_over_the_size_bound_is_declined(
    train: Trainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(xgboost_approximate, "MAX_WEIGHTS", 10)
    assert ApproximateExplainer.create(train("binary:logistic"), (0, 0), nthread=1) is None


def test_a_written_model_that_disagrees_is_not_used_and_the_algorithm_still_answers(
    train: Trainer,
    served: Served,
    rows: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real = xgboost_vector_leaf.path_sums

    def credited_to_the_wrong_feature(tree, n_features):  # type: ignore[no-untyped-def]
        sums, leaves = real(tree, n_features)
        return np.roll(sums, 1, axis=1), leaves

    monkeypatch.setattr(xgboost_vector_leaf, "path_sums", credited_to_the_wrong_feature)
    booster = train("binary:logistic", rounds=5)
    algorithm = served(booster)
    with caplog.at_level(logging.WARNING):
        got = algorithm.predict(Batch(rows), (KEY,)).outputs[KEY]
    assert algorithm.members[0].approximation.get() is None  # type: ignore[union-attr]
    assert "disagrees" in caplog.text
    np.testing.assert_array_equal(got, _xgboost_approx(booster, rows))


def test_it_is_written_once_whatever_the_number_of_threads_asking(train: Trainer) -> None:
    lazy = LazyApproximation(train("binary:logistic"), (0, 0), nthread=1)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(lazy.get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got[0] is not None
    assert all(explainer is got[0] for explainer in got)
