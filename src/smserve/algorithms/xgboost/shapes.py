"""Shapes of XGBoost's inputs and outputs (``algorithms.xgboost``): one row's prediction and
contributions per objective, and a batch widened past the columns a client sent."""

from __future__ import annotations

import numpy as np

from smserve.algorithms.xgboost.model import ModelInfo
from smserve.scipy_sparse import sparse as sp
from smserve.types import Features


def row_shape(info: ModelInfo, margin: bool) -> tuple[int, ...]:
    if info.num_target > 1:
        return (info.num_target,)
    if info.objective == "multi:softprob" or (margin and info.is_multiclass):
        return (info.num_class,)
    return ()


def contribution_shape(info: ModelInfo, features: Features) -> tuple[int, ...]:
    width = int(features.shape[1]) + 1  # the bias last
    groups = info.num_target if info.num_target > 1 else info.num_class
    return (groups, width) if groups > 1 else (width,)


def widened(features: sp.csr_matrix, width: int) -> sp.csr_matrix:
    # Same arrays, wider shape: absent entries are missing values to XGBoost.
    parts = (features.data, features.indices, features.indptr)
    return sp.csr_matrix(parts, shape=(features.shape[0], width), copy=False)


def with_missing_column(features: np.ndarray) -> np.ndarray:
    wide = np.full((features.shape[0], features.shape[1] + 1), np.nan, dtype=np.float32)
    wide[:, :-1] = features
    return wide
