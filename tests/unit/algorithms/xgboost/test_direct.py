"""The C API predictor and the single-threaded copy give exactly what ``inplace_predict``
gives: dense and CSR, values and margins, every objective; and without them (an XGBoost
whose private names differ) the algorithm still answers the same."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve.algorithms.xgboost import direct as xgboost_direct
from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.algorithms.xgboost.direct import DirectPredictor
from smserve.algorithms.xgboost.model import SMALL_BATCH_ROWS, Member, configure
from smserve.types import Batch

Trainer = Callable[..., xgb.Booster]
Saver = Callable[..., Path]
Loader = Callable[..., XGBoost]


def _inplace(booster: xgb.Booster, x: object, margin: bool = False) -> np.ndarray:
    kind = "margin" if margin else "value"
    return np.asarray(booster.inplace_predict(x, predict_type=kind, validate_features=False))


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob", "reg:squarederror"])
@pytest.mark.parametrize("margin", [False, True])
def test_direct_equals_inplace_predict(
    train: Trainer, model_features: np.ndarray, objective: str, margin: bool
) -> None:
    booster = train(objective)
    predictor = DirectPredictor.create([booster], (0, 0), booster.num_features())
    assert predictor is not None
    x = model_features.copy()
    x[::3, 1] = np.nan
    for rows in (x[:1], x, sp.csr_matrix(x), sp.csr_matrix(x[:7, :2])):
        batch = sp.csr_matrix(rows) if sp.issparse(rows) else np.ascontiguousarray(rows)
        if sp.issparse(batch) and batch.shape[1] < x.shape[1]:
            batch = sp.csr_matrix(
                (batch.data, batch.indices, batch.indptr), shape=(batch.shape[0], x.shape[1])
            )
        expected = _inplace(booster, batch, margin)
        got = predictor.predict(booster, batch, margin)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_best_iteration_range_is_passed(train: Trainer, model_features: np.ndarray) -> None:
    booster = train("reg:squarederror", rounds=6)
    predictor = DirectPredictor.create([booster], (0, 3), booster.num_features())
    assert predictor is not None
    expected = booster.inplace_predict(model_features, iteration_range=(0, 3))
    got = predictor.predict(booster, model_features, margin=False)
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(got, booster.inplace_predict(model_features))


def test_results_are_copies(train: Trainer, model_features: np.ndarray) -> None:
    booster = train("reg:squarederror")
    predictor = DirectPredictor.create([booster], (0, 0), booster.num_features())
    assert predictor is not None
    first = predictor.predict(booster, model_features[:5], margin=False)
    kept = first.copy()
    predictor.predict(booster, model_features[5:10], margin=False)
    np.testing.assert_array_equal(first, kept)  # XGBoost's buffer was reused, not ours


def test_configure_adds_the_single_threaded_copy_and_the_predictor(
    xgb_binary_dir: Path, model_features: np.ndarray, load_xgboost: Loader
) -> None:
    booster = xgb.Booster()
    booster.load_model(bytearray((xgb_binary_dir / "xgboost-model").read_bytes()))
    member = configure(Member(xgb_binary_dir / "xgboost-model", booster, (0, 0)), "cpu", 2, 4)
    assert member.single is not None
    assert member.direct is not None
    assert member.booster_for(SMALL_BATCH_ROWS) is member.single
    assert member.booster_for(SMALL_BATCH_ROWS + 1) is member.booster
    one = configure(Member(xgb_binary_dir / "xgboost-model", booster, (0, 0)), "cpu", 1, 4)
    assert one.single is None
    assert one.booster_for(1) is booster


def test_a_prediction_that_spares_a_cpu_takes_one_thread_of_a_share_of_two(
    xgb_binary_dir: Path,
) -> None:
    booster = xgb.Booster()
    booster.load_model(bytearray((xgb_binary_dir / "xgboost-model").read_bytes()))
    two = configure(Member(xgb_binary_dir / "xgboost-model", booster, (0, 0)), "cpu", 2, 4)
    assert two.spare is two.single is not None
    assert two.booster_for(SMALL_BATCH_ROWS + 1, spare_cpu=True) is two.single
    assert two.booster_for(SMALL_BATCH_ROWS + 1, spare_cpu=False) is two.booster
    for nthread in (1, 4):  # none to spare; one fewer of four would take another copy
        member = configure(
            Member(xgb_binary_dir / "xgboost-model", booster.copy(), (0, 0)), "cpu", nthread, 4
        )
        assert member.spare is None
        assert member.booster_for(SMALL_BATCH_ROWS + 1, spare_cpu=True) is member.booster


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob"])
def test_sparing_a_cpu_predicts_the_same_bits(
    train: Trainer,
    save: Saver,
    load_xgboost: Loader,
    tmp_path: Path,
    objective: str,
) -> None:
    save(train(objective), tmp_path)
    algorithm = load_xgboost(tmp_path, workers=1, cpu_count=2)  # one worker's share: two CPUs
    assert algorithm.nthread == 2
    assert all(m.spare is not None for m in algorithm.members)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1000, 4)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    margins = [key for key in ("raw_score", "raw_scores") if key in algorithm.output_keys]
    keys = ("score", margins[0], "approximate_contributions", "contributions")
    for rows in (x, sp.csr_matrix(np.nan_to_num(x))):
        alone = algorithm.predict(Batch(rows), keys)
        spared = algorithm.predict(Batch(rows), keys, spare_cpu=True)
        for key in keys:
            np.testing.assert_array_equal(spared.outputs[key], alone.outputs[key])
    explainer = algorithm.members[0].approximation
    assert explainer is not None
    assert (written := explainer.get()) is not None
    assert len(written.spare) == len(written.boosters)  # the approximation spared one too


def test_without_the_private_names_inplace_predict_answers(
    xgb_multiclass_dir: Path,
    model_features: np.ndarray,
    load_xgboost: Loader,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    direct = load_xgboost(xgb_multiclass_dir)
    monkeypatch.setattr(xgboost_direct, "_AVAILABLE", False)
    fallback = load_xgboost(xgb_multiclass_dir)
    assert direct.members[0].direct is not None
    assert fallback.members[0].direct is None
    for rows in (model_features[:1], model_features):
        for batch in (Batch(np.ascontiguousarray(rows)), Batch(sp.csr_matrix(rows))):
            np.testing.assert_array_equal(
                direct.predict(batch).outputs["score"], fallback.predict(batch).outputs["score"]
            )
