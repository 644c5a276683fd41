"""Helpers for the algorithm tests: train a tiny booster for any objective and write it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.config import Settings


def labels_for(objective: str, x: np.ndarray) -> np.ndarray:
    """Labels each objective accepts, derived from the features."""
    if objective.startswith("binary:") or objective == "reg:logistic":
        return (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    if objective.startswith("multi:"):
        return np.digitize(x[:, 0], [-0.5, 0.5]).astype(np.float32)
    if objective in ("reg:gamma", "reg:tweedie"):
        return np.exp(x[:, 0] / 2)
    if objective == "count:poisson":
        return np.round(np.exp(x[:, 0]))
    if objective.startswith("rank:"):
        return np.digitize(x[:, 0], [-0.5, 0.5]).astype(np.float32)
    if objective == "survival:cox":
        return np.exp(x[:, 0]) * np.where(x[:, 1] > 0, 1, -1)
    return 2 * x[:, 0] - x[:, 2]


@pytest.fixture
def train(model_features: np.ndarray) -> Callable[..., xgb.Booster]:
    """``train(objective, rounds=4, labels=None, **params)``: a tiny booster on 4 features."""

    def trainer(
        objective: str, rounds: int = 4, labels: np.ndarray | None = None, **params: Any
    ) -> xgb.Booster:
        x = model_features
        y = labels_for(objective, x) if labels is None else labels
        qid = np.repeat(np.arange(3), 20) if objective.startswith("rank:") else None
        if objective.startswith("multi:"):
            params.setdefault("num_class", 3)
        base = {"objective": objective, "max_depth": 2, "nthread": 1, "seed": 0}
        return xgb.train({**base, **params}, xgb.DMatrix(x, y, qid=qid), num_boost_round=rounds)

    return trainer


@pytest.fixture
def save() -> Callable[..., Path]:
    """``save(booster, model_dir, name="xgboost-model")``: write the booster as JSON."""

    def saver(booster: xgb.Booster, model_dir: Path, name: str = "xgboost-model") -> Path:
        model_dir.mkdir(exist_ok=True)
        path = model_dir / name
        path.write_bytes(bytes(booster.save_raw("json")))
        return path

    return saver


@pytest.fixture
def load_xgboost() -> Callable[..., XGBoost]:
    """``load_xgboost(model_dir, **settings)``: XGBoost.load with cpu and the given settings."""

    def loader(model_dir: Path, **settings: Any) -> XGBoost:
        defaults: dict[str, Any] = {"model_dir": model_dir, "xgboost_device": "cpu"}
        return XGBoost.load(Settings(**{**defaults, **settings}), model_dir)

    return loader
