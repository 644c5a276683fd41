"""Which matrix XGBoost trains on: a QuantileDMatrix for hist on the CPU, else a DMatrix.
That both give the same model is tested on whole jobs in test_xgboost.py."""

from __future__ import annotations

import pytest
import xgboost as xgb

from smserve.training.data import Dataset
from smserve.training.xgboost_matrices import training_matrices

from .training_data import quarter_steps


@pytest.mark.parametrize(
    ("params", "kind"),
    [
        ({}, xgb.QuantileDMatrix),
        ({"tree_method": "hist", "max_bin": 16}, xgb.QuantileDMatrix),
        ({"tree_method": "auto"}, xgb.QuantileDMatrix),
        ({"tree_method": "approx"}, xgb.DMatrix),
        ({"tree_method": "exact"}, xgb.DMatrix),
        ({"tree_method": "hist", "device": "cuda"}, xgb.DMatrix),
    ],
)
def test_hist_on_the_cpu_quantises_the_rows_as_it_reads_them(
    params: dict[str, object], kind: type[xgb.DMatrix]
) -> None:
    features, labels = quarter_steps(50, 4)
    data = {
        "train": Dataset("train", features, labels),
        "validation": Dataset("validation", features[:0], labels[:0]),  # an empty shard
    }
    matrices = training_matrices({"device": "cpu", **params}, data)
    assert [type(m) for m in matrices.values()] == [kind, kind]
    assert [m.num_row() for m in matrices.values()] == [50, 0]
