"""Shared model fixtures: tiny, deterministic model directories built into ``tmp_path``.

Each ``*_dir`` fixture is a fresh directory holding one model file, so a test may add or
remove files freely. XGBoost models are trained once per session and copied per test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smserve.algorithms.ndarray import write_ndarray_file

N_FEATURES = 4
N_CLASSES = 3


@pytest.fixture
def kmeans_centroids() -> np.ndarray:
    """k=3, d=4 float32 centroids (the worked example of the NDArray file format)."""
    return np.array(
        [[0.0, 0.0, 0.0, 0.0], [10.0, 10.0, 10.0, 10.0], [1.5, 16.0, 14.0, 23.0]],
        dtype=np.float32,
    )


@pytest.fixture
def kmeans_model_dir(tmp_path: Path, kmeans_centroids: np.ndarray) -> Path:
    """A k-means model directory: ``model_algo-1`` holding ``kmeans_centroids``."""
    model_dir = tmp_path / "kmeans-model"
    model_dir.mkdir()
    write_ndarray_file(model_dir / "model_algo-1", kmeans_centroids)
    return model_dir


@pytest.fixture(scope="session")
def model_features() -> np.ndarray:
    """60 rows of 4 float32 features the XGBoost fixtures were trained on."""
    return np.random.default_rng(7).normal(size=(60, N_FEATURES)).astype(np.float32)


def _train(params: dict[str, Any], x: np.ndarray, y: np.ndarray, rounds: int = 5) -> bytes:
    import xgboost as xgb

    base = {"max_depth": 2, "eta": 0.5, "nthread": 1, "seed": 0}
    booster = xgb.train({**base, **params}, xgb.DMatrix(x, y), num_boost_round=rounds)
    return bytes(booster.save_raw("json"))


@pytest.fixture(scope="session")
def _xgb_models(model_features: np.ndarray) -> dict[str, bytes]:
    x = model_features
    return {
        "binary": _train({"objective": "binary:logistic"}, x, (x[:, 0] + x[:, 1] > 0)),
        "multiclass": _train(
            {"objective": "multi:softprob", "num_class": N_CLASSES},
            x,
            np.digitize(x[:, 0], [-0.5, 0.5]),
            rounds=3,
        ),
        "regression": _train({"objective": "reg:squarederror"}, x, 2 * x[:, 0] - x[:, 2]),
    }


def _model_dir(tmp_path: Path, kind: str, model: bytes) -> Path:
    model_dir = tmp_path / f"xgb-{kind}"
    model_dir.mkdir()
    (model_dir / "xgboost-model").write_bytes(model)
    return model_dir


@pytest.fixture
def xgb_binary_dir(tmp_path: Path, _xgb_models: dict[str, bytes]) -> Path:
    """``xgboost-model``: binary:logistic, 4 features, 5 trees."""
    return _model_dir(tmp_path, "binary", _xgb_models["binary"])


@pytest.fixture
def xgb_multiclass_dir(tmp_path: Path, _xgb_models: dict[str, bytes]) -> Path:
    """``xgboost-model``: multi:softprob, 3 classes, 4 features, 3 rounds (9 trees)."""
    return _model_dir(tmp_path, "multiclass", _xgb_models["multiclass"])


@pytest.fixture
def xgb_regression_dir(tmp_path: Path, _xgb_models: dict[str, bytes]) -> Path:
    """``xgboost-model``: reg:squarederror, 4 features, 5 trees."""
    return _model_dir(tmp_path, "regression", _xgb_models["regression"])
