"""The matrices XGBoost trains on, from a job's datasets (``train`` first).

``hist`` on the CPU (XGBoost's default method) trains on the quantised rows alone, so they are
quantised straight from the rows read (``QuantileDMatrix``; the other sets on the training
set's bins, with the job's ``max_bin``): the same model as from a ``DMatrix``, bit for bit,
without its copy of every value (8 bytes each, 400 MB for 1,000,000 x 50). ``exact`` and
``approx``, and the GPU (untested here: no device), keep ``DMatrix``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import xgboost as xgb

from smserve.training.channels import TRAIN
from smserve.training.data import Dataset

QUANTISED_METHODS = ("auto", "hist")  # "auto" is "hist" since XGBoost 2.0


def training_matrices(
    params: Mapping[str, Any], data: Mapping[str, Dataset]
) -> dict[str, xgb.DMatrix]:
    """XGBoost's matrices of ``data``, by name: quantised for ``hist`` on the CPU."""
    if not _quantised(params):
        return {name: xgb.DMatrix(d.features, label=d.labels) for name, d in data.items()}
    bins = {"max_bin": params["max_bin"]} if "max_bin" in params else {}
    train = xgb.QuantileDMatrix(data[TRAIN].features, label=data[TRAIN].labels, **bins)
    return {
        name: xgb.QuantileDMatrix(d.features, label=d.labels, ref=train, **bins)
        if name != TRAIN
        else train
        for name, d in data.items()
    }


def _quantised(params: Mapping[str, Any]) -> bool:
    method = params.get("tree_method", "hist")
    return method in QUANTISED_METHODS and params.get("device", "cpu") == "cpu"
