"""Model files are inputs: each hostile edit of a real model's JSON (bench/hostile/hostile_models)
is refused at load, before XGBoost parses it, with the file, tree and node named; the same
edits in UBJSON too; every kind of model XGBoost writes passes. The refusals run in this
process: a check that let one through would crash it (SIGSEGV), so a crash is a failure too."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xgboost as xgb

from bench.hostile.hostile_models import CASES, ModelCase, base_document, case_document, trees
from smserve.algorithms.xgboost.model import load_member
from smserve.algorithms.xgboost.validation import LoadBudget, check_document, validate
from smserve.errors import ModelLoadError

REFUSED = [case for case in CASES if case.refused is True]
WHERE = {  # the place each refusal must name
    "far split feature (50,000,000)": "tree 1, node 6: splits on feature 50000000",
    "right child != left child + 1": "tree 0, node 0: right child 1 is not its left child + 1",
    "children out of range": "tree 2, node 6: left child 399 is outside the tree's 9 nodes",
    "cycle": "tree 0, node 6: left child 1 is not after the node",
    "tree_info group 7 of 1": "tree 1: output group 7",
    "best_iteration -5": "best_iteration -5 is not one of its 3 iterations",
    "category size out of range": "tree 1, node 2: its categories are outside",
}


def _written(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "xgboost-model"
    path.write_bytes(json.dumps(document).encode())
    return path


@pytest.mark.parametrize("case", REFUSED, ids=lambda case: case.name)
def test_each_hostile_model_is_refused_before_xgboost_reads_it(
    case: ModelCase, tmp_path: Path
) -> None:
    path = _written(tmp_path, case_document(case))
    with pytest.raises(ModelLoadError) as refused:
        load_member(path, allow_pickle=False)
    message = str(refused.value)
    assert message.startswith(f"{path} is not a valid XGBoost model: ")
    assert WHERE.get(case.name, "") in message
    assert "Traceback" not in message
    assert "/__w/" not in message


_TO_UBJSON = """
import sys, xgboost as xgb
booster = xgb.Booster()
booster.load_model(bytearray(open(sys.argv[1], "rb").read()))
sys.stdout.buffer.write(bytes(booster.save_raw("ubj")))
"""


@pytest.mark.parametrize(
    "name", ["far split feature (50,000,000)", "cycle", "tree_info group 7 of 1", "self loop"]
)
def test_the_same_edits_in_ubjson_are_refused(name: str, tmp_path: Path) -> None:
    """XGBoost loads these (it crashes only when it predicts), so it writes their UBJSON, in
    a process of its own."""
    case = next(c for c in CASES if c.name == name)
    source = _written(tmp_path, case_document(case))
    done = subprocess.run([sys.executable, "-c", _TO_UBJSON, str(source)], capture_output=True)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "model.ubj"
    path.write_bytes(done.stdout)
    with pytest.raises(ModelLoadError, match=r"model.ubj is not a valid XGBoost model: tree"):
        load_member(path, allow_pickle=False)


def _booster(params: dict[str, Any], labels: Callable[[np.ndarray], np.ndarray]) -> xgb.Booster:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 5)).astype(np.float32)
    matrix = xgb.DMatrix(x, label=labels(x))
    depth = {} if params.get("booster") == "gblinear" else {"max_depth": 3}
    return xgb.train({"nthread": 1, **depth, **params}, matrix, num_boost_round=4)


KINDS = {
    "binary": ({"objective": "binary:logistic"}, lambda x: x[:, 0] > 0),
    "multiclass": (
        {"objective": "multi:softprob", "num_class": 3},
        lambda x: np.digitize(x[:, 0], [-1, 1]),
    ),
    "vector leaf": (
        {"objective": "reg:squarederror", "multi_strategy": "multi_output_tree"},
        lambda x: x[:, :2],
    ),
    "one tree per target": ({"objective": "reg:squarederror"}, lambda x: x[:, :3]),
    "dart": (
        {"objective": "binary:logistic", "booster": "dart", "rate_drop": 0.3},
        lambda x: x[:, 0] > 0,
    ),
    "gblinear": ({"objective": "binary:logistic", "booster": "gblinear"}, lambda x: x[:, 0] > 0),
    "forest": (
        {"objective": "reg:squarederror", "num_parallel_tree": 3, "subsample": 0.5},
        lambda x: x[:, 0],
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_every_kind_of_model_xgboost_writes_passes(kind: str, fmt: str) -> None:
    params, labels = KINDS[kind]
    validate(Path("xgboost-model"), bytes(_booster(params, labels).save_raw(fmt)))


def test_categorical_and_early_stopped_models_pass(tmp_path: Path) -> None:
    validate(Path("m"), json.dumps(base_document(categorical=True)).encode())
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 3)).astype(np.float32)
    train, valid = xgb.DMatrix(x[:250], x[:250, 0] > 0), xgb.DMatrix(x[250:], x[250:, 0] > 0)
    booster = xgb.train(
        {"objective": "binary:logistic"},
        train,
        60,
        evals=[(valid, "v")],
        early_stopping_rounds=2,
        verbose_eval=False,
    )
    assert booster.attr("best_iteration") is not None
    for fmt in ("json", "ubj"):
        validate(Path("m"), bytes(booster.save_raw(fmt)))


def test_nan_and_infinite_thresholds_pass() -> None:
    document = base_document()
    trees(document)[0]["split_conditions"][0] = float("nan")
    trees(document)[1]["split_conditions"][0] = float("inf")
    validate(Path("m"), json.dumps(document).encode())  # NaN, Infinity: not strict JSON


def test_declared_sizes_are_charged_to_the_load_budget() -> None:
    document = base_document()
    small = LoadBudget(limit=64 << 20, threads=2, source="a test's 64 MiB")
    check_document(document, small)
    document["learner"]["learner_model_param"]["num_feature"] = str(1_000_000)
    with pytest.raises(Exception, match=r"its 1000000 features would need 512000000 bytes"):
        check_document(document, small)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t["tree_param"].update(num_nodes="8"), "has 9 entries for 8 nodes"),
        (lambda t: t.update(left_children=[1.5] * 9), "left_children is not an array of integers"),
        (lambda t: t["parents"].__setitem__(3, 0), "names node 0 as its parent"),
        (lambda t: t["split_type"].__setitem__(0, 3), "split type 3 is neither"),
        (
            lambda t: t["right_children"].__setitem__(8, 4),
            "a leaf (left child -1) with right child 4",
        ),
    ],
)
def test_arrays_must_agree_with_each_other(
    edit: Callable[[dict[str, Any]], None], expected: str
) -> None:
    document = base_document()
    edit(trees(document)[2])
    with pytest.raises(ModelLoadError, match=r"tree 2") as refused:
        validate(Path("m"), json.dumps(document).encode())
    assert expected in str(refused.value)
