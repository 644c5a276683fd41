"""``smserve score`` with NumPy files: each ``.npy`` (``--split-type None``: one file, one
body) answered as a ``.npy`` of the predictions, equal to XGBoost in-process."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from tests.process.servers import run_cli, server_env

pytestmark = pytest.mark.process

NPY = "application/x-npy"


def test_npy_files_in_npy_answers_out(model_dir: Path, tmp_path: Path) -> None:
    import xgboost as xgb

    rows = np.random.default_rng(4).normal(size=(25, 4))  # float64, as np.save would be given
    (tmp_path / "in").mkdir()
    np.save(tmp_path / "in" / "batch.npy", rows, allow_pickle=False)
    np.save(tmp_path / "in" / "fortran.npy", np.asfortranarray(rows[:7]), allow_pickle=False)
    command = ["score", "--model-dir", str(model_dir), str(tmp_path / "in")]
    command += ["--output", str(tmp_path / "out"), "--workers", "1", "--content-type", NPY]
    command += ["--accept", NPY, "--split-type", "None", "--assemble-with", "None"]
    result = run_cli(command, server_env(8080, {}))
    assert result.returncode == 0, result.stderr
    booster = xgb.Booster(model_file=bytearray((model_dir / "xgboost-model").read_bytes()))
    expected = booster.inplace_predict(rows.astype(np.float32))
    for name, count in (("batch.npy.out", 25), ("fortran.npy.out", 7)):
        answer = np.load(io.BytesIO((tmp_path / "out" / name).read_bytes()), allow_pickle=False)
        assert answer.shape == (count, 3)  # multi:softprob: one probability per class
        np.testing.assert_allclose(answer, expected[:count], rtol=1e-6)
