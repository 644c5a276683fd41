"""A failed multi-model load answers the first line of the library's message, trimmed: no stack
trace, no C++ source or library paths, the model file by its own name; for a model the
validation refuses, the tree and node."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xgboost as xgb
from flask.testing import FlaskClient

from bench.hostile.hostile_models import CASES, case_document
from smserve.config import Settings
from smserve.failures import load_message
from smserve.http.app import create_app
from smserve.repository import runtime


def _client(tmp_path: Path) -> FlaskClient:
    settings = Settings(
        multi_model=True,
        models_dir=tmp_path / "models",
        runtime_dir=tmp_path / "run",
        allow_pickle=True,
    )
    return create_app(runtime.prepare(settings)).test_client()


def _model(tmp_path: Path, name: str, data: bytes) -> None:
    folder = tmp_path / "models" / name / "model"
    folder.mkdir(parents=True)
    (folder / "xgboost-model").write_bytes(data)


def _unknown_objective() -> bytes:
    """A model whose structure passes every check but whose objective XGBoost does not know:
    XGBoost's error carries its source path, a stack trace and the list of objectives."""
    x = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    booster = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(x, label=x[:, 0] > 0), 2)
    document = json.loads(booster.save_raw("json"))
    document["learner"]["objective"]["name"] = "reg:bogus"
    return json.dumps(document).encode()


def test_a_failed_load_answers_without_the_library_s_stack_trace(tmp_path: Path) -> None:
    _model(tmp_path, "broken", _unknown_objective())
    answer = _client(tmp_path).post("/models", json={"model_name": "broken", "url": "broken/model"})
    assert answer.status_code == 400
    message = answer.get_json()["message"]
    assert message.startswith("Unable to load model broken: xgboost-model is not an XGBoost model")
    assert message.endswith("XGBoost said: Unknown objective function: `reg:bogus`")
    for leak in ("Stack trace", "[bt]", "libxgboost", ".cc:", "/__w/", str(tmp_path), "\n"):
        assert leak not in message


def test_a_refused_hostile_model_is_named_by_file_tree_and_node(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "children out of range")
    _model(tmp_path, "hostile", json.dumps(case_document(case)).encode())
    answer = _client(tmp_path).post(
        "/models", json={"model_name": "hostile", "url": "hostile/model"}
    )
    assert answer.status_code == 400
    assert answer.get_json()["message"] == (
        "Unable to load model hostile: xgboost-model is not a valid XGBoost model: tree 2, "
        "node 6: left child 399 is outside the tree's 9 nodes"
    )


def test_load_message_keeps_the_first_line_and_the_file_name() -> None:
    raw = (
        "/opt/ml/models/m/xgboost-model: cannot unpickle: [18:57:30] /__w/xgboost/src/a.cc:989:"
        " Check failed: x\nStack trace:\n  [bt] (0) /usr/lib/libxgboost.so(+0x2c) [0x7f]"
    )
    assert load_message(Exception(raw)) == "xgboost-model: cannot unpickle: Check failed: x"
