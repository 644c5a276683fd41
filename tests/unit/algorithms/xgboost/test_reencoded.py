"""A checked JSON model handed to XGBoost as UBJSON: XGBoost then holds exactly the model it
would have parsed from the JSON (its own re-save is byte for byte the same), and a document
the re-encoding could not carry exactly is handed over as the JSON it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms.xgboost.validation import validate

PARAMS: dict[str, dict[str, Any]] = {
    "binary": {"objective": "binary:logistic"},
    "multiclass": {"objective": "multi:softprob", "num_class": 3},
    "dart": {"booster": "dart", "objective": "reg:squarederror", "rate_drop": 0.3},
    "gamma": {"objective": "reg:gamma"},
    "forest": {"objective": "reg:squarederror", "num_parallel_tree": 3, "subsample": 0.8},
}


def _trained(params: dict[str, Any]) -> bytes:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 5))
    x[rng.random(x.shape) < 0.1] = np.nan  # missing values: default_left both ways
    label = np.abs(rng.normal(size=300)) + 0.1
    if "num_class" in params or params["objective"] == "binary:logistic":
        label = rng.integers(0, params.get("num_class", 2), 300)
    booster = xgb.train(params | {"max_depth": 4, "nthread": 1}, xgb.DMatrix(x, label), 10)
    booster.set_attr(best_iteration="7")
    return bytes(booster.save_raw("json"))


def _held(data: bytes) -> bytes:
    booster = xgb.Booster()
    booster.load_model(bytearray(data))
    return bytes(booster.save_raw("ubj"))


@pytest.mark.parametrize("kind", list(PARAMS))
def test_xgboost_holds_the_model_its_json_describes(kind: str) -> None:
    data = _trained(PARAMS[kind])
    handed = validate(Path("xgboost-model"), data)
    assert handed[:1] == b"{"
    assert not handed.lstrip().startswith(b'{"')
    assert _held(handed) == _held(data)


def _with_split_condition(data: bytes, value: float) -> bytes:
    document = json.loads(data)
    document["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"][0] = value
    return json.dumps(document).encode()


def test_a_float_halfway_between_two_float32s_is_left_to_xgboost() -> None:
    halfway = 0.75 + 2.0**-25  # exactly between 0.75 and the next float32 (2**-24 above)
    data = _with_split_condition(_trained(PARAMS["binary"]), halfway)
    assert validate(Path("xgboost-model"), data) is data


def test_a_float_outside_float32s_normal_range_is_left_to_xgboost() -> None:
    data = _with_split_condition(_trained(PARAMS["binary"]), 1e-40)
    assert validate(Path("xgboost-model"), data) is data


def test_models_that_are_not_plain_forests_are_left_to_xgboost() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(200, 3)), rng.normal(size=200)
    linear = xgb.train({"booster": "gblinear"}, xgb.DMatrix(x, y), 3)
    vector_leaf = xgb.train(
        {"multi_strategy": "multi_output_tree", "tree_method": "hist"},
        xgb.DMatrix(x, np.stack([y, -y], axis=1)),
        3,
    )
    for booster in (linear, vector_leaf):
        data = bytes(booster.save_raw("json"))
        assert validate(Path("xgboost-model"), data) is data


def test_ubjson_is_handed_over_as_it_came() -> None:
    booster = xgb.Booster()
    booster.load_model(bytearray(_trained(PARAMS["binary"])))
    data = bytes(booster.save_raw("ubj"))
    assert validate(Path("xgboost-model"), data) is data
