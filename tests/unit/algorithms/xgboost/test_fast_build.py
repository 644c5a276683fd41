"""The fast predictor's life: built in the background while XGBoost answers, switched in at
once, refused when it disagrees, chosen per batch size from measurements, skipped for a model
unloaded before its turn, and safe under concurrent requests."""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve.algorithms.xgboost import fast as xgboost_fast
from smserve.algorithms.xgboost.algorithm import XGBoost, _xgboost_predict
from smserve.algorithms.xgboost.fast import FastPredictor, FastSlot, Serving, build
from smserve.algorithms.xgboost.fast_choice import Timing, choose
from smserve.algorithms.xgboost.fast_trees import FlatTrees, flat_trees
from smserve.types import Batch

Trainer = Callable[..., xgb.Booster]
Saver = Callable[..., Path]
Loader = Callable[..., XGBoost]


def _rows(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)
    x[np.random.default_rng(seed + 1).random(x.shape) < 0.1] = np.nan
    return x


def _wait_serving(slot: FastSlot, timeout_s: float = 120.0) -> Serving:
    deadline = time.monotonic() + timeout_s
    while slot.serving is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert slot.serving is not None, "the fast predictor never started serving"
    return slot.serving


@pytest.fixture
def blocked_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Builds wait in their first step until the event is set."""
    release = threading.Event()

    def waiting(booster: xgb.Booster, iteration_range: tuple[int, int]) -> FlatTrees:
        release.wait(60)
        return flat_trees(booster, iteration_range)

    monkeypatch.setattr(xgboost_fast, "flat_trees", waiting)
    yield release
    release.set()


def test_xgboost_answers_during_the_build_then_the_switch_is_atomic(
    train: Trainer,
    save: Saver,
    load_xgboost: Loader,
    tmp_path: Path,
    blocked_reads: threading.Event,
) -> None:
    save(train("binary:logistic", rounds=20, max_depth=4), tmp_path)
    plain = load_xgboost(tmp_path, fast_predictor="off")
    algorithm = load_xgboost(tmp_path)  # auto: queued for a background build
    slot = algorithm.members[0].fast
    assert slot is not None
    x = _rows(50)
    expected = plain.predict(Batch(x)).outputs["score"].tobytes()
    for _ in range(20):  # answered while the build waits: by XGBoost
        assert algorithm.predict(Batch(x)).outputs["score"].tobytes() == expected
    assert slot.serving is None
    blocked_reads.set()
    serving = _wait_serving(slot)
    assert serving.max_rows >= 1
    assert slot.for_rows(1) is serving.predictor
    assert algorithm.predict(Batch(x[:1])).outputs["score"].tobytes() == expected[:4]
    assert algorithm.predict(Batch(x)).outputs["score"].tobytes() == expected


def test_a_disagreeing_predictor_is_refused(
    train: Trainer,
    save: Saver,
    load_xgboost: Loader,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(booster: xgb.Booster, iteration_range: tuple[int, int]) -> FlatTrees:
        trees = flat_trees(booster, iteration_range)
        trees.nodes["value"][trees.nodes["left"] < 0] *= np.float32(1.01)  # every leaf off
        return trees

    monkeypatch.setattr(xgboost_fast, "flat_trees", broken)
    save(train("binary:logistic", rounds=6, max_depth=3), tmp_path)
    algorithm = load_xgboost(tmp_path, fast_predictor="off")
    member = _slotted(algorithm)
    with caplog.at_level(logging.WARNING, logger="smserve.algorithms.xgboost.fast"):
        assert build(member, _xgboost_predict) is None
    assert member.fast is not None
    assert member.fast.serving is None
    assert "refused, it differs from XGBoost" in caplog.text


def test_off_builds_nothing(
    train: Trainer, save: Saver, load_xgboost: Loader, tmp_path: Path
) -> None:
    save(train("reg:squarederror"), tmp_path)
    assert load_xgboost(tmp_path, fast_predictor="off").members[0].fast is None


def test_a_model_unloaded_before_its_turn_is_skipped(
    train: Trainer,
    save: Saver,
    load_xgboost: Loader,
    tmp_path: Path,
    blocked_reads: threading.Event,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in ("kept", "dropped"):
        save(train("reg:squarederror", rounds=4), tmp_path / name, name=f"{name}-model")
    kept = load_xgboost(tmp_path / "kept")
    dropped = load_xgboost(tmp_path / "dropped")
    dropped_slot = dropped.members[0].fast
    assert dropped_slot is not None
    del dropped  # as a hot swap or a multi-model eviction drops a version
    gc.collect()
    with caplog.at_level(logging.INFO, logger="smserve.algorithms.xgboost.fast"):
        blocked_reads.set()
        assert kept.members[0].fast is not None
        _wait_serving(kept.members[0].fast)
        time.sleep(0.2)
    assert dropped_slot.serving is None
    assert "kept-model: fast predictor serves" in caplog.text
    assert "dropped-model" not in caplog.text


def _slotted(algorithm: XGBoost) -> xgboost_fast.Source:
    from dataclasses import replace

    member = replace(algorithm.members[0], fast=FastSlot())
    algorithm.members = (member,)
    return member


def test_each_batch_size_goes_where_the_choice_says(
    train: Trainer, save: Saver, load_xgboost: Loader, tmp_path: Path
) -> None:
    save(train("binary:logistic", rounds=6, max_depth=3), tmp_path)
    algorithm = load_xgboost(tmp_path, fast_predictor="off")
    member = _slotted(algorithm)
    trees = flat_trees(member.booster, member.iteration_range)
    sizes: list[int] = []

    class Counting(FastPredictor):
        def predict(self, features: object, margin: bool) -> np.ndarray:
            sizes.append(int(features.shape[0]))  # type: ignore[attr-defined]
            return super().predict(features, margin)  # type: ignore[arg-type]

    assert member.fast is not None
    member.fast.serving = Serving(Counting(trees), max_rows=16)
    for n in (1, 16, 17, 200):
        algorithm.predict(Batch(_rows(n)))
    assert sizes == [1, 16]


def _fake_measure(fast_per_row: float, xgboost_fixed: float) -> Callable[..., Timing]:
    """Timings from a cost model: fast is proportional to rows, XGBoost a fixed cost plus a
    smaller one per row, so the crossover sits at a known size."""

    def measure(fast: object, xgboost: object, batch: np.ndarray) -> Timing:
        n = batch.shape[0]
        return Timing(n, fast_per_row * n, xgboost_fixed + fast_per_row * n / 4)

    return measure


def test_the_choice_is_the_largest_size_measured_faster(monkeypatch: pytest.MonkeyPatch) -> None:
    # fast wins while n < 4/3 * 1000 = 1333: 1,024 (measured) wins, 4,096 loses; 2,048 between.
    monkeypatch.setattr(
        "smserve.algorithms.xgboost.fast_choice.measure", _fake_measure(1.0, 1000.0)
    )
    choice = choose(lambda x: None, lambda x: None, _rows(8), time.monotonic() + 60)
    assert choice.max_rows == 1024
    assert [t.rows for t in choice.timings] == [1, 4, 16, 64, 256, 1024, 4096, 2048]
    assert "XGBoost" in choice.explained()


def test_the_choice_can_be_none_and_stops_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("smserve.algorithms.xgboost.fast_choice.measure", _fake_measure(1.0, 0.0))
    assert choose(lambda x: None, lambda x: None, _rows(8), time.monotonic() + 60).max_rows == 0
    monkeypatch.setattr("smserve.algorithms.xgboost.fast_choice.measure", _fake_measure(1.0, 1e9))
    assert choose(lambda x: None, lambda x: None, _rows(8), time.monotonic() - 1).max_rows == 0


def test_concurrent_requests_get_their_own_answers(
    train: Trainer, save: Saver, load_xgboost: Loader, tmp_path: Path
) -> None:
    save(train("multi:softprob", rounds=10, max_depth=4), tmp_path)
    plain = load_xgboost(tmp_path, fast_predictor="off")
    algorithm = load_xgboost(tmp_path, fast_predictor="off")
    member = _slotted(algorithm)
    assert member.fast is not None
    member.fast.serving = Serving(FastPredictor(flat_trees(member.booster, (0, 0))), 1 << 30)
    keys = ("score", "predicted_label", "probabilities")
    batches = [_rows(n, seed=n) for n in (1, 3, 64, 65, 700, 2000)]
    batches += [sp.csr_matrix(np.nan_to_num(b)) for b in batches[:3]]
    expected = [_bytes(plain, b, keys) for b in batches]

    def check(i: int) -> bool:
        return _bytes(algorithm, batches[i % len(batches)], keys) == expected[i % len(batches)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(check, range(400)))


def _bytes(algorithm: XGBoost, features: object, keys: tuple[str, ...]) -> list[bytes]:
    prediction = algorithm.predict(Batch(features), keys)  # type: ignore[arg-type]
    return [array.tobytes() for array in prediction.outputs.values()]
