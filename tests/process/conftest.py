"""A tiny XGBoost model trained into a temporary directory, shared by a module's server."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

N_FEATURES = 4


@pytest.fixture(scope="module")
def xgb_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``xgboost-model``: binary:logistic on 4 features, 3 trees."""
    import xgboost as xgb

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, N_FEATURES)).astype(np.float32)
    params = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(x, label=x[:, 0] > 0), num_boost_round=3)
    model_dir = tmp_path_factory.mktemp("xgb-model")
    (model_dir / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))
    return model_dir
