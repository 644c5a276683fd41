"""A legacy model file served by the real processes: ``smserve serve`` with SM_MODEL_DIR
holding a legacy binary ``xgboost-model`` (as the built-ins 1.3-1 to 1.7-1 wrote it), and
``smserve score`` with a 0.90-style pickle, read without SMSERVE_ALLOW_PICKLE. Both reach
``xgboost.model.load_member``, as multi-model loads, Ray and Spark workers do."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from tests.process.servers import run_cli, running_server, server_env
from tests.unit.algorithms.xgboost.test_legacy import legacy_stump

pytestmark = pytest.mark.process

ROWS = b"0.2,0.0\n0.7,0.0\n"
EXPECTED = np.float32([-0.5, 1.5])  # base_score 0.5 + the stump's leaves


def test_serve_answers_with_a_legacy_binary_model(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "xgboost-model").write_bytes(legacy_stump())
    with running_server(tmp_path, {"SM_MODEL_DIR": str(model_dir)}) as server:
        connection = server.connection()
        connection.request("POST", "/invocations", ROWS, {"Content-Type": "text/csv"})
        response = connection.getresponse()
        body = response.read().decode()
        connection.close()
    assert response.status == 200, body
    np.testing.assert_array_equal(np.float32(body.split()), EXPECTED)


def _pickle_0_90(handle: bytes) -> bytes:
    """A Booster pickle as 0.90 wrote it: the global, NEWOBJ, then BUILD with the state."""
    state = pickle.dumps({"handle": bytearray(handle)}, protocol=3)
    return b"\x80\x03cxgboost.core\nBooster\nq\x00)\x81q\x01" + state[2:-1] + b"b."


def test_score_answers_with_a_pickle_without_the_opt_in(tmp_path: Path) -> None:
    model_dir, inputs = tmp_path / "model", tmp_path / "in"
    model_dir.mkdir()
    inputs.mkdir()
    (model_dir / "xgboost-model").write_bytes(_pickle_0_90(legacy_stump((0, 0))[4:]))
    (inputs / "rows.csv").write_bytes(ROWS)
    args = ["score", "--model-dir", str(model_dir), "--content-type", "text/csv"]
    args += ["--workers", "1", str(inputs), "--output", str(tmp_path / "out")]
    result = run_cli(args, server_env(8080, {}))
    assert result.returncode == 0, result.stderr
    scores = np.float32((tmp_path / "out" / "rows.csv.out").read_text().split())
    np.testing.assert_array_equal(scores, EXPECTED)  # 0.90: base_score 0.5 stored as is
