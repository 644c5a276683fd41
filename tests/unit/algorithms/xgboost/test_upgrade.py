"""``smserve model inspect|upgrade``: inspect names the format and era; upgrade writes UBJSON
that loads (as the server loads it) and predicts exactly what the legacy file did."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms.xgboost.model import load_member
from smserve.cli import main
from tests.unit.algorithms.xgboost.test_legacy import legacy_stump


def test_inspect_prints_format_era_and_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "xgboost-model"
    path.write_bytes(legacy_stump())
    assert main(["model", "inspect", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "legacy binary (with binf header), written by XGBoost 1.7" in printed
    assert "objective:      reg:squarederror" in printed
    assert "trees:          1" in printed
    assert "features:       2" in printed


def test_upgrade_writes_ubjson_that_predicts_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy, upgraded = tmp_path / "xgboost-model", tmp_path / "upgraded"
    legacy.write_bytes(legacy_stump())
    assert main(["model", "upgrade", str(legacy), str(upgraded)]) == 0
    assert upgraded.read_bytes().startswith(b"{")  # UBJSON
    rows = np.array([[0.2, 0.0], [0.7, 1.0], [np.nan, 0.0]], dtype=np.float32)
    before = load_member(legacy, False).booster.inplace_predict(rows)
    np.testing.assert_array_equal(
        load_member(upgraded, False).booster.inplace_predict(rows), before
    )
    assert "written:" in capsys.readouterr().out


def test_a_bad_file_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy, upgraded = tmp_path / "xgboost-model", tmp_path / "upgraded"
    legacy.write_bytes(legacy_stump()[:-4])
    assert main(["model", "upgrade", str(legacy), str(upgraded)]) == 2
    assert "tree_info at byte" in capsys.readouterr().err
    assert not upgraded.exists()
