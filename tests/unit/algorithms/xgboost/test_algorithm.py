"""XGBoost: default outputs per objective, ensembles, best iteration, model files (pickle
opt-in, stray files), feature-count rules, sparse input and device selection."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve import media
from smserve.algorithms.loading import load_algorithm
from smserve.algorithms.xgboost.algorithm import XGBoost, majority_vote
from smserve.algorithms.xgboost.model import choose_device, threads_per_worker
from smserve.config import Settings
from smserve.errors import InvalidInput, ModelLoadError
from smserve.types import Batch

Trainer = Callable[..., xgb.Booster]
Loader = Callable[..., XGBoost]
Saver = Callable[..., Path]

OBJECTIVES = [
    "reg:squarederror",
    "reg:logistic",
    "reg:gamma",
    "reg:tweedie",
    "reg:absoluteerror",
    "reg:pseudohubererror",
    "binary:logistic",
    "binary:logitraw",
    "binary:hinge",
    "multi:softmax",
    "multi:softprob",
    "count:poisson",
    "survival:cox",
    "rank:pairwise",
    "rank:ndcg",
]


def dense(x: np.ndarray) -> Batch:
    return Batch(np.ascontiguousarray(x, dtype=np.float32))


def reference(booster: xgb.Booster, x: np.ndarray, **kwargs: object) -> np.ndarray:
    return np.asarray(booster.predict(xgb.DMatrix(x), **kwargs))


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_default_score_matches_booster_predict(
    tmp_path: Path,
    save: Saver,
    train: Trainer,
    load_xgboost: Loader,
    model_features: np.ndarray,
    objective: str,
) -> None:
    booster = train(objective)
    save(booster, tmp_path)
    algorithm = load_xgboost(tmp_path)
    prediction = algorithm.predict(dense(model_features[:10]))
    assert prediction.names == ("score",)
    score = prediction.outputs["score"]
    assert score.dtype == np.float32
    np.testing.assert_allclose(score, reference(booster, model_features[:10]), rtol=1e-6)
    assert algorithm.objective == objective


def test_softprob_score_is_a_row_per_input(
    xgb_multiclass_dir: Path, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    score = load_xgboost(xgb_multiclass_dir).predict(dense(model_features[:5])).outputs["score"]
    assert score.shape == (5, 3)
    np.testing.assert_allclose(score.sum(axis=1), 1.0, rtol=1e-6)


def test_class_attributes(xgb_binary_dir: Path) -> None:
    algorithm = load_algorithm(Settings(model_dir=xgb_binary_dir, xgboost_device="cpu"))
    assert isinstance(algorithm, XGBoost)
    assert (algorithm.default_content_type, algorithm.default_accept) == (media.LIBSVM, media.CSV)
    assert algorithm.n_features == 4


def test_a_booster_without_names_has_none(binary: XGBoost) -> None:
    assert binary.feature_names == ()


@pytest.mark.parametrize(
    "names", [["age", "income", "tenure", "score"], ["f0", "f1", "f2", "f3"]], ids=["own", "f"]
)
def test_feature_names_come_from_the_booster(
    tmp_path: Path, save: Saver, load_xgboost: Loader, model_features: np.ndarray, names: list[str]
) -> None:
    """Names the booster records are the model's own, even when they read f0, f1, ..."""
    dtrain = xgb.DMatrix(model_features, label=model_features[:, 0], feature_names=names)
    save(xgb.train({"nthread": 1}, dtrain, num_boost_round=2), tmp_path)
    assert load_xgboost(tmp_path).feature_names == tuple(names)


def test_ubjson_model_loads(
    tmp_path: Path, train: Trainer, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    booster = train("reg:squarederror")
    (tmp_path / "xgboost-model").write_bytes(bytes(booster.save_raw("ubj")))
    score = load_xgboost(tmp_path).predict(dense(model_features)).outputs["score"]
    np.testing.assert_allclose(score, reference(booster, model_features), rtol=1e-6)


# Ensembles


def test_ensemble_averages(
    tmp_path: Path, save: Saver, train: Trainer, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    boosters = [train("reg:squarederror", rounds=r) for r in (2, 3, 5)]
    for i, booster in enumerate(boosters):
        save(booster, tmp_path, f"xgboost-model-{i}")
    score = load_xgboost(tmp_path).predict(dense(model_features)).outputs["score"]
    expected = np.mean([reference(b, model_features) for b in boosters], axis=0)
    np.testing.assert_allclose(score, expected, rtol=1e-6)


@pytest.mark.parametrize("objective", ["multi:softmax", "binary:hinge"])
def test_two_member_vote_breaks_ties_to_the_lowest_class(
    tmp_path: Path,
    save: Saver,
    train: Trainer,
    load_xgboost: Loader,
    model_features: np.ndarray,
    objective: str,
) -> None:
    x = model_features
    flipped = (x[:, 2] > 0).astype(np.float32) + (objective == "multi:softmax") * (x[:, 3] > 0)
    boosters = [train(objective), train(objective, labels=flipped)]
    for i, booster in enumerate(boosters):
        save(booster, tmp_path, f"xgboost-model-{i}")
    first, second = (reference(b, x) for b in boosters)
    assert (first != second).any(), "the members should disagree somewhere"
    score = load_xgboost(tmp_path).predict(dense(x)).outputs["score"]
    np.testing.assert_array_equal(score, np.minimum(first, second))


def test_majority_vote() -> None:
    labels = [
        np.array([0.0, 2.0, 1.0, 2.0]),
        np.array([2.0, 0.0, 1.0, 2.0]),
        np.array([2, 1, 0, 1]),
    ]
    np.testing.assert_array_equal(majority_vote(labels, 3), [2.0, 0.0, 1.0, 2.0])
    assert majority_vote(labels, 3).dtype == np.float32


def test_ensemble_off_serves_the_first_file(
    tmp_path: Path, save: Saver, train: Trainer, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    boosters = [train("reg:squarederror", rounds=r) for r in (2, 5)]
    for i, booster in enumerate(boosters):
        save(booster, tmp_path, f"xgboost-model-{i}")
    algorithm = load_xgboost(tmp_path, ensemble=False)
    assert len(algorithm.members) == 1
    score = algorithm.predict(dense(model_features)).outputs["score"]
    np.testing.assert_allclose(score, reference(boosters[0], model_features), rtol=1e-6)


def test_ensemble_members_must_agree(
    tmp_path: Path, save: Saver, train: Trainer, load_xgboost: Loader
) -> None:
    save(train("reg:squarederror"), tmp_path, "xgboost-model-0")
    save(train("binary:logistic"), tmp_path, "xgboost-model-1")
    with pytest.raises(ModelLoadError, match="ensemble members disagree"):
        load_xgboost(tmp_path)


def test_best_iteration_is_honoured(
    tmp_path: Path, save: Saver, train: Trainer, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    booster = train("reg:squarederror", rounds=6)
    booster.set_attr(best_iteration="1")
    save(booster, tmp_path)
    score = load_xgboost(tmp_path).predict(dense(model_features))
    best = reference(booster, model_features, iteration_range=(0, 2))
    np.testing.assert_allclose(score.outputs["score"], best, rtol=1e-6)
    assert not np.allclose(best, reference(booster, model_features))


# Model files


def test_pickled_booster_loads_without_opt_in(
    tmp_path: Path, train: Trainer, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    booster = train("reg:squarederror")  # only Booster globals: read without running code
    (tmp_path / "xgboost-model").write_bytes(pickle.dumps(booster))
    score = load_xgboost(tmp_path).predict(dense(model_features))
    np.testing.assert_array_equal(score.outputs["score"], reference(booster, model_features))


def test_pickle_needing_other_globals_is_refused_without_opt_in(
    tmp_path: Path, model_features: np.ndarray, load_xgboost: Loader
) -> None:
    model = xgb.XGBRegressor(n_estimators=2, max_depth=2, n_jobs=1)
    model.fit(model_features, model_features[:, 0])
    (tmp_path / "xgboost-model").write_bytes(pickle.dumps(model))
    with pytest.raises(
        ModelLoadError,
        match="xgboost-model is a pickle that needs xgboost.sklearn.XGBRegressor.*ALLOW_PICKLE",
    ):
        load_xgboost(tmp_path)


def test_pickled_booster_loads_with_opt_in(
    tmp_path: Path, train: Trainer, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    booster = train("binary:logistic")
    (tmp_path / "xgboost-model").write_bytes(pickle.dumps(booster))
    score = load_xgboost(tmp_path, allow_pickle=True).predict(dense(model_features))
    np.testing.assert_allclose(score.outputs["score"], reference(booster, model_features))


def test_pickled_sklearn_model_loads_with_opt_in(
    tmp_path: Path, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    model = xgb.XGBRegressor(n_estimators=3, max_depth=2, n_jobs=1)
    model.fit(model_features, model_features[:, 0])
    (tmp_path / "xgboost-model").write_bytes(pickle.dumps(model))
    score = load_xgboost(tmp_path, allow_pickle=True).predict(dense(model_features))
    np.testing.assert_allclose(score.outputs["score"], model.predict(model_features), rtol=1e-6)


def test_pickle_of_something_else_is_refused(tmp_path: Path, load_xgboost: Loader) -> None:
    (tmp_path / "xgboost-model").write_bytes(pickle.dumps({"not": "a booster"}))
    with pytest.raises(ModelLoadError, match="holds a dict, not a Booster"):
        load_xgboost(tmp_path, allow_pickle=True)


def test_stray_file_is_named(xgb_binary_dir: Path, load_xgboost: Loader) -> None:
    (xgb_binary_dir / "requirements.txt").write_text("xgboost==3.2\n")
    with pytest.raises(ModelLoadError, match="requirements.txt is not an XGBoost model"):
        load_xgboost(xgb_binary_dir)


def test_dotfiles_and_subdirectories_are_ignored(xgb_binary_dir: Path) -> None:
    (xgb_binary_dir / ".DS_Store").write_bytes(b"\x00\x01")
    (xgb_binary_dir / "code").mkdir()
    (xgb_binary_dir / "code" / "inference.py").write_text("")
    assert isinstance(load_algorithm(Settings(model_dir=xgb_binary_dir)), XGBoost)


def test_empty_directory_names_the_expected_file(tmp_path: Path, load_xgboost: Loader) -> None:
    with pytest.raises(ModelLoadError, match="expected xgboost-model"):
        load_xgboost(tmp_path)


# Feature counts and sparse input


@pytest.fixture
def binary(xgb_binary_dir: Path, load_xgboost: Loader) -> XGBoost:
    return load_xgboost(xgb_binary_dir)


def with_nan_last_column(x: np.ndarray) -> np.ndarray:
    return np.hstack([x, np.full((x.shape[0], 1), np.nan, dtype=np.float32)])


def test_too_many_dense_columns(binary: XGBoost, model_features: np.ndarray) -> None:
    with pytest.raises(InvalidInput, match="expected 4 features, got 5"):
        binary.predict(dense(with_nan_last_column(model_features)))


def test_too_few_dense_columns_hints_at_the_setting(
    binary: XGBoost, model_features: np.ndarray
) -> None:
    with pytest.raises(InvalidInput, match="expected 4 features, got 3.*ONE_FEWER"):
        binary.predict(dense(model_features[:, :3]))


def test_one_fewer_column_is_a_missing_last_feature_when_allowed(
    xgb_binary_dir: Path, load_xgboost: Loader, model_features: np.ndarray
) -> None:
    algorithm = load_xgboost(xgb_binary_dir, allow_one_fewer_feature=True)
    narrow = model_features[:, :3]
    score = algorithm.predict(dense(narrow)).outputs["score"]
    full = algorithm.predict(dense(with_nan_last_column(narrow))).outputs["score"]
    np.testing.assert_array_equal(score, full)
    with pytest.raises(InvalidInput, match="got 2"):
        algorithm.predict(dense(model_features[:, :2]))


def test_sparse_equals_dense_with_missing_values(
    binary: XGBoost, model_features: np.ndarray
) -> None:
    x = model_features.copy()
    absent = np.random.default_rng(1).random(x.shape) < 0.4
    sparse = sp.csr_matrix(np.where(absent, 0.0, x).astype(np.float32))
    x[absent] = np.nan
    from_sparse = binary.predict(Batch(sparse)).outputs["score"]
    np.testing.assert_array_equal(from_sparse, binary.predict(dense(x)).outputs["score"])


def test_narrow_sparse_input_has_missing_trailing_features(
    binary: XGBoost, model_features: np.ndarray
) -> None:
    narrow = sp.csr_matrix(model_features[:, :2])
    score = binary.predict(Batch(narrow)).outputs["score"]
    x = model_features.copy()
    x[:, 2:] = np.nan
    np.testing.assert_array_equal(score, binary.predict(dense(x)).outputs["score"])


def test_wide_sparse_input_is_rejected(binary: XGBoost) -> None:
    wide = sp.csr_matrix(np.ones((2, 6), dtype=np.float32))
    with pytest.raises(InvalidInput, match="expected 4 features, got 6"):
        binary.predict(Batch(wide))


# Device and threads


def test_cpu_device_is_configured(binary: XGBoost) -> None:
    config = json.loads(binary.members[0].booster.save_config())
    assert config["learner"]["generic_param"]["device"] == "cpu"


def test_cuda_without_a_gpu_is_a_load_error(
    xgb_binary_dir: Path, train: Trainer, load_xgboost: Loader
) -> None:
    if choose_device("auto", train("reg:squarederror", rounds=1)) == "cuda":
        pytest.skip("a GPU is visible here")
    with pytest.raises(ModelLoadError, match="SMSERVE_XGBOOST_DEVICE=cuda"):
        load_xgboost(xgb_binary_dir, xgboost_device="cuda")


def test_auto_device_falls_back_to_cpu_without_a_gpu(train: Trainer) -> None:
    assert choose_device("auto", train("reg:squarederror", rounds=1)) in ("cpu", "cuda")
    assert choose_device("cpu", train("reg:squarederror", rounds=1)) == "cpu"


def test_threads_are_shared_between_workers() -> None:
    assert threads_per_worker(2, 10_000) == 1
    assert threads_per_worker(8, 2) == 4
    assert threads_per_worker(1, 1) == 1
