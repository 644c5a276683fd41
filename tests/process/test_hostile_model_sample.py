"""bench/hostile/hostile_model_suite.py's sample as part of the suite: one hostile model file of
each class (far split feature, non-adjacent children, children out of range, a cycle, a bad
output group, best_iteration -5, a 3 KB file declaring a million features, a category out of
range), each loaded in a process of its own as a worker loads it, with the bounds asserted:
refused with the file, tree and node named (or, the wide one, refused or served), never a
crash, each under 200 MB and 2 s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

SUITE = Path(__file__).resolve().parents[2] / "bench" / "hostile" / "hostile_model_suite.py"


def test_the_hostile_model_sample_stays_within_its_bounds(tmp_path: Path) -> None:
    report = tmp_path / "models.json"
    command = [sys.executable, str(SUITE), "--sample", "--json", str(report)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert report.exists(), done.stdout[-4000:] + done.stderr[-4000:]
    rows = json.loads(report.read_text())
    assert len(rows) >= 8
    for row in rows:
        assert row["outcome"] in ("refused", "served"), row
        assert row["peak_mb"] < 200, row
        assert row["seconds"] < 2.0 or not row["timed"], row
        if row["expected"] != "either":
            assert row["outcome"] == row["expected"], row
        if row["outcome"] == "refused" and "best_iteration" not in row["name"]:
            assert "xgboost-model is not a valid XGBoost model: tree " in row["detail"], row
    assert done.returncode == 0, done.stdout[-4000:]
