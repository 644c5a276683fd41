"""``smserve model inspect|upgrade``: what a model file is (format and era, booster, objective,
trees, features, outputs) and the same model written as UBJSON for the installed XGBoost,
written only once it predicts what the loaded model does on probe rows (missing values
included), bit for bit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xgboost as xgb

from smserve.algorithms.model_files import read_model_file
from smserve.algorithms.xgboost.legacy import model_document
from smserve.algorithms.xgboost.model import Member, load_member
from smserve.errors import ModelLoadError

PROBE_ROWS = 256
MAX_PROBE_FEATURES = 4096  # wider models are probed on their first columns (the rest missing)


@dataclass(frozen=True)
class Report:
    path: Path
    origin: str
    booster: str
    objective: str
    trees: int
    features: int
    outputs: int
    best_iteration: str | None

    def lines(self) -> list[str]:
        return [
            f"file:           {self.path}",
            f"format:         {self.origin}",
            f"booster:        {self.booster}",
            f"objective:      {self.objective}",
            f"trees:          {self.trees}",
            f"features:       {self.features}",
            f"outputs:        {self.outputs}",
            f"best_iteration: {self.best_iteration or '(none: every tree is served)'}",
        ]


def inspect(path: Path, allow_pickle: bool) -> tuple[Report, Member]:
    """What ``path`` holds, and the model as it is served."""
    origin = model_document(path, read_model_file(path), allow_pickle).origin
    member = load_member(path, allow_pickle)
    config = json.loads(member.booster.save_config())["learner"]
    params = config["learner_model_param"]
    outputs = max(1, int(params.get("num_class", 0)), int(params.get("num_target", 1)))
    report = Report(
        path=path,
        origin=origin,
        booster=config["gradient_booster"]["name"],
        objective=config["objective"]["name"],
        trees=_tree_count(member.booster),
        features=member.booster.num_features(),
        outputs=outputs,
        best_iteration=member.booster.attr("best_iteration"),
    )
    return report, member


def _tree_count(booster: xgb.Booster) -> int:
    model = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]
    return len(model.get("gbtree", model).get("model", {}).get("trees", []))


def upgrade(path: Path, out: Path, allow_pickle: bool) -> Report:
    """Write the model ``path`` as UBJSON to ``out`` once the written file, loaded as the
    server loads it, predicts what the loaded model does; ModelLoadError when it does not."""
    report, member = inspect(path, allow_pickle)
    partial = out.with_name(out.name + ".partial")
    partial.write_bytes(bytes(member.booster.save_raw("ubj")))
    try:
        _check_same(member, load_member(partial, False), probe_rows(report.features))
    except BaseException:
        partial.unlink()
        raise
    partial.replace(out)
    return report


def _check_same(loaded: Member, written: Member, rows: np.ndarray) -> None:
    for kind in ("value", "margin"):
        before = _predict(loaded, rows, kind)
        if not np.array_equal(before, _predict(written, rows, kind), equal_nan=True):
            raise ModelLoadError(f"{loaded.path}: the upgraded model predicts differently")


def probe_rows(features: int) -> np.ndarray:
    """Random rows with missing values; a model wider than MAX_PROBE_FEATURES gets its first
    columns random and the rest missing."""
    width = max(1, min(features, MAX_PROBE_FEATURES))
    rows = np.random.default_rng(0).normal(size=(PROBE_ROWS, width)).astype(np.float32)
    rows[::5, ::3] = np.nan
    if features > width:
        rows = np.hstack([rows, np.full((PROBE_ROWS, features - width), np.nan, np.float32)])
    return rows


def _predict(member: Member, rows: np.ndarray, kind: str) -> np.ndarray:
    """XGBoost's DMatrix prediction, which every booster has (gblinear has no inplace one)."""
    data = xgb.DMatrix(rows, missing=np.nan)
    try:
        predicted = member.booster.predict(
            data, iteration_range=member.iteration_range, output_margin=kind == "margin"
        )
    except xgb.core.XGBoostError as exc:
        first = (str(exc).strip().splitlines() or ["failed"])[0]
        raise ModelLoadError(f"{member.path}: XGBoost cannot predict with it: {first}") from None
    return np.asarray(predicted)
