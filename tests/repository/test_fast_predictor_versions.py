"""A hot swap to a new XGBoost version gets that version its own fast predictor, and every
answer, before and after it switches in, is XGBoost's own."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import xgboost as xgb

from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.config import Settings
from smserve.repository.config import ModelConfig
from smserve.repository.loading import ModelLoader
from smserve.repository.repository import Repository
from smserve.types import Batch


def _write_version(base: Path, version: int, rounds: int) -> xgb.Booster:
    rng = np.random.default_rng(version)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    params = {"objective": "binary:logistic", "max_depth": 3, "nthread": 1, "seed": version}
    booster = xgb.train(params, xgb.DMatrix(x, label=x[:, 0] > 0), num_boost_round=rounds)
    staging = base / f".staging-{version}"
    staging.mkdir(parents=True)
    (staging / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))
    staging.rename(base / str(version))
    return booster


def _served(repository: Repository) -> XGBoost:
    algorithm = repository.models["m"].served(None, None).algorithm  # type: ignore[attr-defined]
    assert isinstance(algorithm, XGBoost)
    return algorithm


def _wait_fast(algorithm: XGBoost, timeout_s: float = 120.0) -> None:
    slot = algorithm.members[0].fast
    assert slot is not None
    deadline = time.monotonic() + timeout_s
    while slot.serving is None:
        assert time.monotonic() < deadline, "no fast predictor"
        time.sleep(0.01)


def test_each_version_gets_its_own_fast_predictor(tmp_path: Path) -> None:
    rows = np.random.default_rng(9).normal(size=(3, 4)).astype(np.float32)
    loader = ModelLoader(Settings(xgboost_device="cpu"))
    first = _write_version(tmp_path, 1, rounds=5)
    repository = Repository.from_configs([ModelConfig("m", tmp_path)], loader)
    repository.refresh()
    old = _served(repository)
    _wait_fast(old)
    second = _write_version(tmp_path, 2, rounds=9)
    repository.refresh()
    new = _served(repository)
    assert new is not old
    for booster, algorithm in ((first, old), (second, new)):
        expected = np.asarray(booster.inplace_predict(rows)).tobytes()
        assert algorithm.predict(Batch(rows[:1])).outputs["score"].tobytes() == expected[:4]
    _wait_fast(new)
    assert new.members[0].fast is not old.members[0].fast
    expected = np.asarray(second.inplace_predict(rows)).tobytes()
    assert new.predict(Batch(rows)).outputs["score"].tobytes() == expected
