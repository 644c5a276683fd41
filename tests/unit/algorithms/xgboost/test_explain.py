"""XGBoost explanations: contributions and approximate_contributions sum to the raw margin,
in XGBoost's layout, for every objective kind, ensembles and best_iteration models."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.errors import ModelLoadError
from smserve.types import Batch

EXPLANATIONS = ("contributions", "approximate_contributions")
# float32 sums of ~5 values of order 1: a few ulps of the margin
ATOL = 1e-5


def _margin(booster: xgb.Booster, x: np.ndarray, iteration_range: tuple[int, int] = (0, 0)):
    return booster.predict(xgb.DMatrix(x), output_margin=True, iteration_range=iteration_range)


@pytest.mark.parametrize(
    "objective",
    [
        "binary:logistic",
        "binary:logitraw",
        "binary:hinge",
        "reg:squarederror",
        "reg:logistic",
        "reg:gamma",
        "count:poisson",
        "rank:pairwise",
        "rank:ndcg",
        "survival:cox",
    ],
)
@pytest.mark.parametrize("key", EXPLANATIONS)
def test_single_output_contributions_sum_to_the_margin(
    objective: str,
    key: str,
    tmp_path: Path,
    model_features: np.ndarray,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    booster = train(objective, base_score=0.3 if objective == "binary:logistic" else None)
    save(booster, tmp_path)
    contributions = load_xgboost(tmp_path).predict(Batch(model_features), (key,)).outputs[key]
    assert contributions.shape == (60, 5)  # 4 features, then the bias
    assert contributions.dtype == np.float32
    np.testing.assert_allclose(
        contributions.sum(axis=1), _margin(booster, model_features), rtol=0, atol=ATOL
    )


@pytest.mark.parametrize("objective", ["multi:softprob", "multi:softmax"])
@pytest.mark.parametrize("key", EXPLANATIONS)
def test_multiclass_gives_one_vector_per_class_summing_to_its_margin(
    objective: str,
    key: str,
    tmp_path: Path,
    model_features: np.ndarray,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    booster = train(objective)
    save(booster, tmp_path)
    contributions = load_xgboost(tmp_path).predict(Batch(model_features), (key,)).outputs[key]
    assert contributions.shape == (60, 3, 5)
    np.testing.assert_allclose(
        contributions.sum(axis=2), _margin(booster, model_features), rtol=0, atol=ATOL
    )


def test_layout_is_xgboosts_features_in_model_order_then_the_bias(
    tmp_path: Path,
    model_features: np.ndarray,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    booster = train("reg:squarederror")
    save(booster, tmp_path)
    got = load_xgboost(tmp_path).predict(Batch(model_features), ("contributions",))
    expected = booster.predict(xgb.DMatrix(model_features), pred_contribs=True)
    np.testing.assert_array_equal(got.outputs["contributions"], expected)
    # Feature 1 never enters 2 * x0 - x2: its share is zero and x0 carries the most.
    shares = np.abs(got.outputs["contributions"][:, :4]).mean(axis=0)
    assert shares[1] < shares[0]
    assert int(shares.argmax()) == 0


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softmax"])
def test_ensemble_contributions_are_the_members_mean_and_sum_to_the_mean_margin(
    objective: str,
    tmp_path: Path,
    model_features: np.ndarray,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    boosters = [train(objective, rounds=3 + i, seed=i) for i in range(3)]
    for i, booster in enumerate(boosters):
        save(booster, tmp_path, f"xgboost-model-{i}")
    algorithm = load_xgboost(tmp_path)
    assert len(algorithm.members) == 3
    got = algorithm.predict(Batch(model_features), ("contributions",)).outputs["contributions"]
    mean_margin = np.mean([_margin(b, model_features) for b in boosters], axis=0)
    np.testing.assert_allclose(got.sum(axis=-1), mean_margin, rtol=0, atol=ATOL)


def test_best_iteration_models_explain_the_trees_they_predict_with(
    tmp_path: Path,
    model_features: np.ndarray,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    booster = train("binary:logistic", rounds=8)
    booster.set_attr(best_iteration="2")
    save(booster, tmp_path)
    algorithm = load_xgboost(tmp_path)
    prediction = algorithm.predict(Batch(model_features), ("score", *EXPLANATIONS)).outputs
    best = _margin(booster, model_features, (0, 3))
    assert np.abs(best - _margin(booster, model_features)).max() > 1e-3  # the range matters
    for key in EXPLANATIONS:
        np.testing.assert_allclose(prediction[key].sum(axis=1), best, rtol=0, atol=ATOL)
    np.testing.assert_allclose(prediction["score"], 1 / (1 + np.exp(-best)), rtol=1e-6)


def test_sparse_input_explains_as_its_dense_equivalent(
    tmp_path: Path,
    model_features: np.ndarray,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    save(train("multi:softprob"), tmp_path)
    algorithm = load_xgboost(tmp_path)
    dense = model_features.copy()
    dense[::3, 1] = 0.0
    sparse = sp.csr_matrix(dense)  # the zeros are absent entries: missing values
    dense[::3, 1] = np.nan
    narrow = sp.csr_matrix(dense[:, :3])  # the last feature absent altogether
    dense_narrow = dense.copy()
    dense_narrow[:, 3] = np.nan
    for key in EXPLANATIONS:
        from_dense = algorithm.predict(Batch(dense), (key,)).outputs[key]
        from_sparse = algorithm.predict(Batch(sparse), (key,)).outputs[key]
        np.testing.assert_array_equal(from_sparse, from_dense)
        np.testing.assert_array_equal(
            algorithm.predict(Batch(narrow), (key,)).outputs[key],
            algorithm.predict(Batch(dense_narrow), (key,)).outputs[key],
        )


def test_explanations_combine_with_selectable_outputs_in_the_order_asked(
    xgb_binary_dir: Path, model_features: np.ndarray, load_xgboost: Callable[..., XGBoost]
) -> None:
    algorithm = load_xgboost(
        xgb_binary_dir, inference_output=("predicted_label", "contributions", "probability")
    )
    assert algorithm.default_outputs == ("predicted_label", "contributions", "probability")
    prediction = algorithm.predict(Batch(model_features))
    assert prediction.names == ("predicted_label", "contributions", "probability")
    assert prediction.columns == ("contributions",)
    margin = np.log(prediction.outputs["probability"] / (1 - prediction.outputs["probability"]))
    np.testing.assert_allclose(prediction.outputs["contributions"].sum(axis=1), margin, atol=1e-4)


def test_a_request_overrides_the_endpoint_outputs(
    xgb_binary_dir: Path, model_features: np.ndarray, load_xgboost: Callable[..., XGBoost]
) -> None:
    algorithm = load_xgboost(xgb_binary_dir)
    assert algorithm.default_outputs == ("score",)
    assert algorithm.predict(Batch(model_features)).names == ("score",)
    asked = ("approximate_contributions", "raw_scores", "score")
    prediction = algorithm.predict(Batch(model_features), asked)
    assert prediction.names == asked
    assert prediction.outputs["raw_scores"].shape == (60, 2)
    # the endpoint's default is untouched by a request
    assert algorithm.predict(Batch(model_features)).names == ("score",)


def test_output_keys_list_score_the_objectives_keys_and_the_explanations(
    xgb_regression_dir: Path,
    xgb_multiclass_dir: Path,
    tmp_path: Path,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    assert load_xgboost(xgb_regression_dir).output_keys == (
        "score",
        "predicted_score",
        *EXPLANATIONS,
    )
    multiclass = load_xgboost(xgb_multiclass_dir).output_keys
    assert multiclass[0] == "score"
    assert "probabilities" in multiclass
    save(train("rank:pairwise"), tmp_path)
    assert load_xgboost(tmp_path).output_keys == ("score", *EXPLANATIONS)


def test_ranking_endpoint_may_select_contributions_but_not_labels(
    tmp_path: Path,
    train: Callable[..., xgb.Booster],
    save: Callable[..., Path],
    load_xgboost: Callable[..., XGBoost],
) -> None:
    save(train("rank:pairwise"), tmp_path)
    assert load_xgboost(tmp_path, inference_output=("contributions",)).default_outputs == (
        "contributions",
    )
    with pytest.raises(ModelLoadError, match="no selectable output other than score"):
        load_xgboost(tmp_path, inference_output=("predicted_label", "contributions"))


def test_an_empty_batch_gets_empty_contributions_of_the_right_width(
    xgb_multiclass_dir: Path, load_xgboost: Callable[..., XGBoost]
) -> None:
    algorithm = load_xgboost(xgb_multiclass_dir)
    prediction = algorithm.predict(Batch(np.zeros((0, 4), dtype=np.float32)), EXPLANATIONS)
    assert prediction.outputs["contributions"].shape == (0, 3, 5)
    assert prediction.outputs["approximate_contributions"].shape == (0, 3, 5)


def test_approximate_contributions_of_a_cuda_booster_run_on_its_cpu_copy(
    tmp_path: Path, train: Callable[..., xgb.Booster], save: Callable[..., Path]
) -> None:
    """XGBoost's GPU predictor raises for approx_contribs (seen on an H200 with
    bench/gpu_explain_check.py): a member configured for cuda keeps a cpu copy for them."""
    from smserve.algorithms.xgboost.explain import explain
    from smserve.algorithms.xgboost.model import configure, load_member

    save(train("binary:logistic"), tmp_path)
    path = tmp_path / "xgboost-model"
    with warnings.catch_warnings():  # without a GPU, XGBoost warns that it stays on cpu
        warnings.simplefilter("ignore")
        on_cuda = configure(load_member(path, allow_pickle=False), "cuda", 1, 4)
    on_cpu = configure(load_member(path, allow_pickle=False), "cpu", 1, 4)
    assert on_cuda.on_cpu is not None
    assert on_cpu.on_cpu is None
    assert '"device":"cpu"' in on_cuda.on_cpu.save_config().replace(" ", "")
    rows = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32)
    np.testing.assert_array_equal(
        explain(on_cuda, rows, approximate=True, nthread=1),
        explain(on_cpu, rows, approximate=True, nthread=1),
    )
