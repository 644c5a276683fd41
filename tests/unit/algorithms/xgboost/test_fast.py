"""The fast predictor gives XGBoost's bits: every objective family, dense and CSR, missing
values, rows on and beside every split threshold; every output key the same bytes through
the algorithm; too-narrow input refused as before."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve.algorithms.xgboost import fast as xgboost_fast
from smserve.algorithms.xgboost.algorithm import XGBoost, _xgboost_predict
from smserve.algorithms.xgboost.fast import FastPredictor
from smserve.algorithms.xgboost.fast_check import (
    first_disagreement,
    probe_batches,
    probe_rows,
    same_bits,
)
from smserve.algorithms.xgboost.fast_trees import NotCovered, flat_trees
from smserve.errors import InvalidInput
from smserve.types import Batch

Trainer = Callable[..., xgb.Booster]
Saver = Callable[..., Path]
Loader = Callable[..., XGBoost]

OBJECTIVES = [
    "binary:logistic",
    "binary:logitraw",
    "binary:hinge",
    "multi:softprob",
    "multi:softmax",
    "reg:squarederror",
    "reg:logistic",
    "reg:absoluteerror",
    "reg:pseudohubererror",
    "reg:gamma",
    "reg:tweedie",
    "count:poisson",
    "survival:cox",
    "rank:pairwise",
    "rank:ndcg",
]


def _inplace(booster: xgb.Booster, x: object, margin: bool) -> np.ndarray:
    kind = "margin" if margin else "value"
    answer = booster.inplace_predict(x, predict_type=kind, missing=np.nan, validate_features=False)
    return np.asarray(answer)


def _features(rows: int = 200, width: int = 4, seed: int = 3) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(rows, width)).astype(np.float32)
    x[np.random.default_rng(seed + 1).random(x.shape) < 0.15] = np.nan
    return x


def _assert_agrees(booster: xgb.Booster) -> None:
    trees = flat_trees(booster, (0, 0))
    fast = FastPredictor(trees)
    rows = probe_rows(trees.thresholds)
    assert first_disagreement(fast.predict, lambda x, m: _inplace(booster, x, m), rows) is None
    x = _features(width=booster.num_features())
    for batch in (x, x[:1].copy(), sp.csr_matrix(np.nan_to_num(x)), sp.csr_matrix(x)):
        for margin in (False, True):
            got, expected = fast.predict(batch, margin), _inplace(booster, batch, margin)
            assert same_bits(got, expected), (margin, got[:3], expected[:3])


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective_gives_xgboosts_bits(train: Trainer, objective: str) -> None:
    _assert_agrees(train(objective, rounds=12, max_depth=4, eta=0.3))


def test_survival_aft_gives_xgboosts_bits(model_features: np.ndarray) -> None:
    x = model_features
    lower = np.exp(x[:, 0]).astype(np.float32)
    upper = np.where(x[:, 1] > 0, lower, np.inf).astype(np.float32)
    matrix = xgb.DMatrix(x)
    matrix.set_float_info("label_lower_bound", lower)
    matrix.set_float_info("label_upper_bound", upper)
    params = {"objective": "survival:aft", "max_depth": 3, "nthread": 1, "seed": 0}
    _assert_agrees(xgb.train(params, matrix, num_boost_round=10))


def test_multi_target_one_tree_per_target(model_features: np.ndarray) -> None:
    x = model_features
    y = np.stack((x[:, 0] * 2, x[:, 1] - x[:, 2], x[:, 3]), axis=1)
    params = {"objective": "reg:squarederror", "max_depth": 3, "nthread": 1, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(x, y), num_boost_round=8)
    _assert_agrees(booster)
    assert flat_trees(booster, (0, 0)).base.size == 3


def test_multi_quantile_regression(model_features: np.ndarray) -> None:
    params = {"objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.5, 0.9], "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(model_features, model_features[:, 0]), 8)
    _assert_agrees(booster)


def test_exact_tree_method_and_random_forest(train: Trainer) -> None:
    _assert_agrees(train("reg:squarederror", rounds=6, tree_method="exact", max_depth=4))
    _assert_agrees(train("binary:logistic", rounds=3, num_parallel_tree=4, subsample=0.8))


def test_best_iteration_keeps_only_its_trees(train: Trainer) -> None:
    booster = train("binary:logistic", rounds=10, max_depth=3)
    fast = FastPredictor(flat_trees(booster, (0, 4)))
    x = _features()
    expected = booster.inplace_predict(x, iteration_range=(0, 4))
    assert same_bits(fast.predict(x, False), np.asarray(expected))


def test_probe_rows_sit_on_and_beside_every_threshold(train: Trainer) -> None:
    trees = flat_trees(train("reg:squarederror", rounds=8, max_depth=4), (0, 0))
    rows = probe_rows(trees.thresholds)
    for column, thresholds in enumerate(trees.thresholds):
        values = rows[:, column]
        for t in thresholds:
            assert np.any(values == t)
            assert np.any(values == np.nextafter(t, np.float32(-np.inf)))
            assert np.any(values == np.nextafter(t, np.float32(np.inf)))
    assert np.isnan(rows[4:]).any()
    assert np.isinf(rows).any()
    assert any(sp.issparse(batch) for batch in probe_batches(rows))


def _nudge_leaf(nodes: np.ndarray) -> None:
    leaf = int(np.flatnonzero(nodes["left"] < 0)[0])
    nodes["value"][leaf] *= np.float32(1.001)


def _threshold_one_step_up(nodes: np.ndarray) -> None:
    nodes["value"][0] = np.nextafter(nodes["value"][0], np.float32(np.inf))


def _flip_default_direction(nodes: np.ndarray) -> None:
    nodes["feature"][0] ^= np.uint32(1 << 31)


@pytest.mark.parametrize("breakage", [_nudge_leaf, _threshold_one_step_up, _flip_default_direction])
def test_a_broken_predictor_is_caught(
    train: Trainer, breakage: Callable[[np.ndarray], None]
) -> None:
    booster = train("binary:logistic", rounds=6, max_depth=3)
    trees = flat_trees(booster, (0, 0))
    breakage(trees.nodes)
    fast = FastPredictor(trees)
    rows = probe_rows(trees.thresholds)
    found = first_disagreement(fast.predict, lambda x, m: _inplace(booster, x, m), rows)
    assert found is not None
    assert "largest difference" in found


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"booster": "dart", "rate_drop": 0.1}, "dart"),
        ({"booster": "gblinear"}, "gblinear"),
        ({"multi_strategy": "multi_output_tree", "tree_method": "hist"}, "vector-leaf"),
    ],
)
def test_models_it_does_not_cover_are_left_to_xgboost(
    model_features: np.ndarray, params: dict[str, object], reason: str
) -> None:
    y = model_features[:, :2] if "multi_strategy" in params else model_features[:, 0]
    base = {"objective": "reg:squarederror", "nthread": 1, "seed": 0}
    booster = xgb.train({**base, **params}, xgb.DMatrix(model_features, y), num_boost_round=3)
    with pytest.raises(NotCovered, match=reason):
        flat_trees(booster, (0, 0))


def test_categorical_splits_are_left_to_xgboost() -> None:
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": pd.Categorical(rng.integers(0, 5, 200)), "x": rng.normal(size=200)})
    y = (frame["c"].cat.codes % 2).to_numpy(dtype=np.float32)
    matrix = xgb.DMatrix(frame, y, enable_categorical=True)
    booster = xgb.train({"tree_method": "hist", "max_cat_to_onehot": 1, "nthread": 1}, matrix, 3)
    with pytest.raises(NotCovered, match="categorical"):
        flat_trees(booster, (0, 0))


def _every_key(algorithm: XGBoost) -> tuple[str, ...]:
    return tuple(k for k in algorithm.output_keys if k not in algorithm.wide_outputs)


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob", "multi:softmax"])
def test_every_output_key_has_the_same_bytes(
    train: Trainer, save: Saver, load_xgboost: Loader, tmp_path: Path, objective: str
) -> None:
    save(train(objective, rounds=10, max_depth=4), tmp_path)
    plain = load_xgboost(tmp_path, fast_predictor="off")
    fast = with_fast(load_xgboost(tmp_path, fast_predictor="off"))
    x = _features(rows=300)
    keys = _every_key(plain)
    for batch in (x, x[:1].copy(), x[:64].copy(), sp.csr_matrix(np.nan_to_num(x))):
        expected = plain.predict(Batch(batch), keys)
        got = fast.predict(Batch(batch), keys)
        assert list(got.outputs) == list(expected.outputs)
        for key, array in expected.outputs.items():
            assert got.outputs[key].dtype == array.dtype, key
            assert got.outputs[key].tobytes() == array.tobytes(), key


def with_fast(algorithm: XGBoost) -> XGBoost:
    """``algorithm`` (loaded with the fast predictor off) with a checked fast predictor that
    serves every batch size."""
    members = tuple(replace(m, fast=xgboost_fast.FastSlot()) for m in algorithm.members)
    algorithm.members = members
    for member in members:
        trees = flat_trees(member.booster, member.iteration_range)
        fast = FastPredictor(trees)
        reference = functools.partial(_xgboost_predict, member)
        assert first_disagreement(fast.predict, reference, probe_rows(trees.thresholds)) is None
        assert member.fast is not None
        member.fast.serving = xgboost_fast.Serving(fast, max_rows=1 << 30)
    return algorithm


def test_too_few_columns_are_refused_as_before(
    train: Trainer, save: Saver, load_xgboost: Loader, tmp_path: Path
) -> None:
    save(train("binary:logistic", rounds=4), tmp_path)
    plain = load_xgboost(tmp_path, fast_predictor="off")
    fast = with_fast(load_xgboost(tmp_path, fast_predictor="off"))
    narrow = _features(rows=3, width=3)
    messages = []
    for algorithm in (plain, fast):
        with pytest.raises(InvalidInput) as caught:
            algorithm.predict(Batch(narrow))
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_the_extension_is_built() -> None:
    assert xgboost_fast.AVAILABLE, "pip install -e . needs a C compiler for xgboost/_fast.c"
