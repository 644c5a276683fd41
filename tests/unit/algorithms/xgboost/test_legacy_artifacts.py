"""Every model file the real old XGBoost releases write, in the forms SageMaker's built-ins
wrote them (pickle, ``save_model``), loads with smserve's loader without the pickle opt-in and
answers what the writing release predicted on the same rows, float32 for float32: gbtree,
dart and gblinear; logistic, logitraw, squared error, gamma, softprob, poisson; base_score
off its default; early stopping. Also k-fold ensembles of such files.

The artifacts are built by tests/legacy_models/build.sh into .legacy-models/ (run-tests runs
it); without that folder these tests skip, saying so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.algorithms.xgboost.model import load_member
from smserve.algorithms.xgboost.upgrade import upgrade
from smserve.config import Settings
from smserve.types import Batch

ROOT = Path(__file__).resolve().parents[4] / ".legacy-models"
SKIP = pytest.mark.skipif(
    not (ROOT / "key").is_file(),
    reason=f"{ROOT} is absent: build it with tests/legacy_models/build.sh (run-tests does)",
)
pytestmark = SKIP
TOLERATED: dict[tuple[str, str, str], float] = {}
# DART served through the server's path (inplace prediction) differs from XGBoost's DMatrix
# prediction in the last bit for some rows, with 3.0.5's own UBJSON files too: not the
# conversion (whose margins below are exact), the installed XGBoost's DART prediction itself.
DART_SERVED_TOLERANCE = 1e-6


def _artifacts() -> list[tuple[Path, dict[str, Any]]]:
    if not (ROOT / "key").is_file():
        return []
    found = []
    for manifest in sorted(ROOT.glob("*/manifest.json")):
        for entry in json.loads(manifest.read_text())["artifacts"]:
            found.append((manifest.parent, entry))
    return found


ARTIFACTS = _artifacts()


def _id(artifact: tuple[Path, dict[str, Any]]) -> str:
    return f"{artifact[0].name}/{artifact[1]['file']}"


def _served(folder: Path, file_name: str, tmp_path: Path) -> np.ndarray:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(folder / file_name, model_dir / "xgboost-model")
    settings = Settings(model_dir=model_dir, xgboost_device="cpu", fast_predictor="off")
    algorithm = XGBoost.load(settings, model_dir)
    rows = np.load(folder / "rows.npy")
    return np.asarray(algorithm.predict(Batch(rows)).outputs["score"])


def _booster_value(folder: Path, file_name: str) -> np.ndarray:
    member = load_member(folder / file_name, allow_pickle=False)
    rows = xgb.DMatrix(np.load(folder / "rows.npy"), missing=np.nan)
    return np.asarray(member.booster.predict(rows, iteration_range=member.iteration_range))


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=[_id(a) for a in ARTIFACTS])
def test_artifact_answers_as_the_release_that_wrote_it(
    artifact: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    folder, entry = artifact
    if not entry["deterministic"]:
        pytest.skip("the writing release's own predictions vary from run to run")
    expected = np.load(folder / f"{entry['name']}.value.npy")
    if entry["booster"] == "gblinear":  # serving gblinear is the other half of issue 32
        served = _booster_value(folder, entry["file"])
    else:
        served = _served(folder, entry["file"], tmp_path)
    tolerance = TOLERATED.get((entry["version"], entry["booster"], entry["form"]))
    if entry["booster"] == "dart" and entry["version"] >= "1.5":
        tolerance = DART_SERVED_TOLERANCE
    if tolerance is None:
        np.testing.assert_array_equal(served, expected.reshape(served.shape))
    else:
        np.testing.assert_allclose(served, expected.reshape(served.shape), rtol=0, atol=tolerance)


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=[_id(a) for a in ARTIFACTS])
def test_artifact_margin_is_the_release_margin(artifact: tuple[Path, dict[str, Any]]) -> None:
    folder, entry = artifact
    if not entry["deterministic"]:
        pytest.skip("the writing release's own predictions vary from run to run")
    member = load_member(folder / entry["file"], allow_pickle=False)
    rows = xgb.DMatrix(np.load(folder / "rows.npy"), missing=np.nan)
    margin = member.booster.predict(
        rows, iteration_range=member.iteration_range, output_margin=True
    )
    expected = np.load(folder / f"{entry['name']}.margin.npy")
    np.testing.assert_array_equal(np.asarray(margin), expected.reshape(np.shape(margin)))


@pytest.mark.parametrize("version", ["1.2.0", "1.7.4"])
def test_k_fold_files_are_served_as_the_built_in_ensemble(version: str, tmp_path: Path) -> None:
    """1.2-2 and later write xgboost-model-0 ... -N (pickles in 1.2, save_model later); the
    built-in answers their mean."""
    folder = ROOT / version
    form = "pickle" if version == "1.2.0" else "save_model"
    names = ["gbtree-0", "gbtree-6", "early-stopped"]  # three binary:logistic boosters
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for index, name in enumerate(names):
        shutil.copy(folder / f"{name}.{form}", model_dir / f"xgboost-model-{index}")
    settings = Settings(model_dir=model_dir, xgboost_device="cpu", fast_predictor="off")
    served = XGBoost.load(settings, model_dir).predict(Batch(np.load(folder / "rows.npy")))
    each = [np.load(folder / f"{name}.value.npy") for name in names]
    expected = np.mean(each, axis=0, dtype=np.float32)
    np.testing.assert_array_equal(served.outputs["score"], expected)


UPGRADED = [a for a in ARTIFACTS if a[1]["name"] in ("gbtree-4", "dart-0", "gblinear-2")]


@pytest.mark.parametrize("artifact", UPGRADED, ids=[_id(a) for a in UPGRADED])
def test_an_upgraded_artifact_keeps_the_release_margin(
    artifact: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """``smserve model upgrade`` writes UBJSON that predicts what the writing release did."""
    folder, entry = artifact
    upgraded = tmp_path / "upgraded"
    upgrade(folder / entry["file"], upgraded, allow_pickle=False)
    member = load_member(upgraded, allow_pickle=False)
    rows = xgb.DMatrix(np.load(folder / "rows.npy"), missing=np.nan)
    margin = member.booster.predict(
        rows, iteration_range=member.iteration_range, output_margin=True
    )
    expected = np.load(folder / f"{entry['name']}.margin.npy")
    np.testing.assert_array_equal(margin, expected.reshape(margin.shape))
