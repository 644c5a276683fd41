"""XGBoost: ``algorithm`` (the Algorithm), ``model`` (loading and configuring boosters),
``output`` and ``shapes`` (the outputs), ``explain``, ``approximate``, ``vector_leaf`` and
``direct`` (explanations and XGBoost's C API), ``fast`` with ``fast_trees``, ``fast_check``,
``fast_choice`` and the C extension ``_fast`` (the fast predictor, docs/design/fast-predictor.md),
``objectives`` and ``lean_import``.

This ``__init__`` holds only the table's entry (``XGBOOST``, see ``smserve.algorithms.catalog``):
it imports the code only when called, so the table stays cheap to import and k-means never
imports XGBoost."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from smserve.algorithms.spec import AlgorithmSpec, DemoSpec

if TYPE_CHECKING:
    import numpy as np

    from smserve.algorithms.base import Algorithm
    from smserve.algorithms.footprint import Footprint
    from smserve.algorithms.heads import ModelFile
    from smserve.config import Settings


def _detects(files: Sequence[ModelFile]) -> bool:
    """Any model file but one of a format or name no XGBoost writes (an MXNet NDArray file, a
    zip, a numpy array, a ``model_algo-1``): XGBoost is the table's catch-all, its loader
    trying every format."""
    from smserve.algorithms.lookalikes import is_foreign

    return any(not is_foreign(file) for file in files)


def _import_lean() -> None:
    from smserve.algorithms.xgboost.lean_import import import_lean

    import_lean()


def _load(settings: Settings, model_dir: Path) -> Algorithm:
    _import_lean()
    from smserve.algorithms.xgboost.algorithm import XGBoost

    return XGBoost.load(settings, model_dir)


def _footprint(files: list[ModelFile], settings: Settings) -> Footprint:
    from smserve.algorithms.footprint import xgboost_footprint

    return xgboost_footprint(files, settings)


def _train_demo(directory: Path) -> None:
    """binary:logistic on the breast-cancer set (30 features, 20 trees), one thread: the data
    is tiny, and it leaves no OpenMP pool behind (see ``smserve.demo``)."""
    import numpy as np
    import xgboost as xgb
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "seed": 0, "nthread": 1}
    dtrain = xgb.DMatrix(data.data.astype(np.float32), label=data.target)
    booster = xgb.train(params, dtrain, num_boost_round=20)
    # The built-in's file name; JSON, the format every XGBoost since 1.0 reads.
    (directory / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))


def _demo_rows() -> np.ndarray:
    from sklearn.datasets import load_breast_cancer

    rows: np.ndarray = load_breast_cancer().data
    return rows


XGBOOST = AlgorithmSpec(
    name="xgboost",
    title="XGBoost",
    model_file="xgboost-model",
    detects=_detects,
    load=_load,
    import_lean=_import_lean,
    # XGBoost may have run OpenMP, whose threads do not survive a fork (the children hang).
    fork_unsafe_modules=("xgboost",),
    trainer="smserve.training.xgboost:XGBoostTrainer",
    footprint=_footprint,
    demo=DemoSpec(train=_train_demo, rows=_demo_rows),
)
