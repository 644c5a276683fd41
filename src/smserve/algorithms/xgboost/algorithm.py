"""XGBoost inference: one booster or a k-fold ensemble, the feature-count check, and the
default ``score`` output or the selectable outputs of ``xgboost.output`` (the endpoint's, or a
request's), explanations (``xgboost.explain``) among them.

Model files: every regular, non-dot file directly in the model directory is a model (see
``model_files``); a file that is not one is an error naming it, never silently skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import xgboost as xgb

from smserve import media
from smserve.algorithms.base import Capabilities
from smserve.algorithms.model_files import candidate_files
from smserve.algorithms.xgboost.direct import inplace_or_matrix
from smserve.algorithms.xgboost.explain import explain
from smserve.algorithms.xgboost.fast import FastSlot, start, wanted
from smserve.algorithms.xgboost.model import (
    Member,
    ModelInfo,
    check_supported,
    choose_device,
    configure,
    load_member,
    read_info,
    threads_per_worker,
)
from smserve.algorithms.xgboost.objectives import objective_capabilities
from smserve.algorithms.xgboost.output import (
    EXPLANATIONS,
    OutputPlan,
    Raw,
    available_keys,
    request_table,
)
from smserve.algorithms.xgboost.shapes import (
    contribution_shape,
    row_shape,
    widened,
    with_missing_column,
)
from smserve.config import Settings
from smserve.errors import InvalidInput, ModelLoadError, PredictionError
from smserve.scipy_sparse import sparse as sp
from smserve.types import Batch, Features, Prediction

logger = logging.getLogger(__name__)

MODEL_NAME = "xgboost-model"
VOTED = {"multi:softmax", "binary:hinge"}  # labels, so an ensemble votes instead of averaging
DEFAULT_OUTPUTS = ("score",)
WIDE_OUTPUTS = frozenset(EXPLANATIONS)  # one value per feature (and class)
PLAN_CACHE_SIZE = 64  # distinct per-request key lists remembered (emptied when full)


class XGBoost:
    """Boosters sharing one objective; several form an ensemble (mean, or majority vote for
    label objectives with ties to the lowest class).

    Feature count: more columns than the model's is an error. Sparse input may have fewer (the
    absent trailing columns are missing values). Dense input must match, or have exactly one
    fewer when ``allow_one_fewer_feature``: the last feature is then a missing value (NaN),
    because XGBoost 3 itself refuses narrower input.

    Explanations of an ensemble are the members' mean, so they sum to its mean margin (for a
    voting objective too: the vote itself has no margin).
    """

    name: ClassVar[str] = "xgboost"
    default_content_type: ClassVar[str] = media.LIBSVM
    default_accept: ClassVar[str] = media.CSV

    def __init__(
        self,
        members: Sequence[Member],
        info: ModelInfo,
        output: OutputPlan | None = None,
        allow_one_fewer_feature: bool = False,
        nthread: int = 1,
    ) -> None:
        self.members = tuple(members)
        self.info = info
        self.output = output or OutputPlan.of(DEFAULT_OUTPUTS, {})
        self.allow_one_fewer_feature = allow_one_fewer_feature
        self.nthread = nthread
        self._plans: dict[tuple[str, ...], OutputPlan] = {}

    @classmethod
    def load(cls, settings: Settings, model_dir: Path) -> XGBoost:
        """Load the model file(s) in ``model_dir``; raises ModelLoadError naming the file."""
        members = [load_member(p, settings.allow_pickle) for p in _model_paths(model_dir, settings)]
        info = _shared_info(members)
        output = _output_plan(settings, info)
        device = choose_device(settings.xgboost_device, members[0].booster)
        nthread = threads_per_worker(settings.cpu_count, settings.workers)
        members = [configure(m, device, nthread, info.num_features) for m in members]
        if wanted(settings.fast_predictor, device):
            members = _with_fast_predictors(members)
        logger.info(
            "XGBoost %s, %d model(s), on %s, %d thread(s)", info, len(members), device, nthread
        )
        return cls(members, info, output, settings.allow_one_fewer_feature, nthread)

    @property
    def n_features(self) -> int | None:
        return self.info.num_features

    @property
    def objective(self) -> str:
        return self.info.objective

    @property
    def capabilities(self) -> Capabilities:
        return objective_capabilities(self.info.objective, self.info.num_class)

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The booster's feature names (() when it has none): columnar decoders take columns
        by them, TF Serving's classify and regress map tf.Example features by them."""
        names = self.members[0].booster.feature_names
        return tuple(names) if names else ()

    @property
    def output_keys(self) -> tuple[str, ...]:
        """Every key a request may select (``score``, the objective's, the explanations)."""
        return available_keys(self.info.objective, self.info.num_target)

    @property
    def default_outputs(self) -> tuple[str, ...]:
        return self.output.keys

    @property
    def wide_outputs(self) -> frozenset[str]:
        return WIDE_OUTPUTS

    def predict(
        self, batch: Batch, outputs: tuple[str, ...] | None = None, spare_cpu: bool = False
    ) -> Prediction:
        """The endpoint's outputs (``score`` of shape (n,) or (n, k), float32, by default), or
        ``outputs``, keys of ``output_keys``. ``spare_cpu``: with a share of two CPUs, predict
        on one (``Member.spare``). Raises InvalidInput for a column count the model cannot
        take."""
        plan = self.output if outputs is None else self._plan(outputs)
        features = self._aligned(batch.features)
        value = self._combined(features, False, spare_cpu) if plan.needs_value else None
        margin = self._combined(features, True, spare_cpu) if plan.needs_margin else None
        explained = {key: self._explained(features, key, spare_cpu) for key in plan.explain}
        raw = Raw(value, margin, self.info.num_class)
        return plan.outputs(raw, explained, int(features.shape[0]))

    def _plan(self, keys: tuple[str, ...]) -> OutputPlan:
        plan = self._plans.get(keys)
        if plan is None:
            table = request_table(self.info.objective, self.info.num_target)
            plan = OutputPlan.of(tuple(dict.fromkeys(keys)), table)
            if len(self._plans) >= PLAN_CACHE_SIZE:
                self._plans.clear()
            self._plans[keys] = plan
        return plan

    def _explained(self, features: Features, key: str, spare_cpu: bool) -> np.ndarray:
        """Contributions (``key`` in EXPLANATIONS), the members' mean for an ensemble."""
        if features.shape[0] == 0:
            return np.zeros((0, *contribution_shape(self.info, features)), dtype=np.float32)
        approximate = key == EXPLANATIONS[1]
        parts = [explain(m, features, approximate, self.nthread, spare_cpu) for m in self.members]
        if len(parts) == 1:
            return parts[0]
        return np.asarray(np.mean(parts, axis=0, dtype=np.float32))

    def _aligned(self, features: Features) -> Features:
        expected, got = self.info.num_features, int(features.shape[1])
        if expected is None or got == expected:
            return features
        if got < expected and sp.issparse(features):
            return widened(features, expected)
        if got == expected - 1 and self.allow_one_fewer_feature:
            return with_missing_column(features)
        raise InvalidInput(f"expected {expected} features, got {got}{_hint(expected, got)}")

    def _combined(self, features: Features, margin: bool, spare_cpu: bool) -> np.ndarray:
        if features.shape[0] == 0:  # XGBoost answers (0,) whatever the output's width
            return np.zeros((0, *row_shape(self.info, margin)), dtype=np.float32)
        predictions = [_predict(m, features, margin, spare_cpu) for m in self.members]
        if len(predictions) == 1:
            return predictions[0]
        if not margin and self.info.objective in VOTED:
            return majority_vote(predictions, max(self.info.num_class, 2))
        return np.asarray(np.mean(predictions, axis=0, dtype=np.float32))


def _predict(member: Member, features: Features, margin: bool, spare_cpu: bool) -> np.ndarray:
    fast = member.fast.for_rows(int(features.shape[0])) if member.fast is not None else None
    if fast is None:
        return _xgboost_predict(member, features, margin, spare_cpu)
    try:
        return fast.predict(features, margin)
    except ValueError as exc:
        raise PredictionError(f"the fast predictor failed with {member.path.name}") from exc


def _xgboost_predict(
    member: Member, features: Features, margin: bool, spare_cpu: bool = False
) -> np.ndarray:
    """XGBoost's own prediction: the C API predictor or ``inplace_predict`` (a DMatrix
    prediction for gblinear, which has no inplace prediction)."""
    booster = member.booster_for(int(features.shape[0]), spare_cpu)
    try:
        if member.direct is not None:
            return member.direct.predict(booster, features, margin)
        result = inplace_or_matrix(booster, features, margin, member.iteration_range)
    except xgb.core.XGBoostError as exc:
        raise PredictionError(f"XGBoost failed to predict with {member.path.name}") from exc
    return np.asarray(result, dtype=np.float32)


def _with_fast_predictors(members: list[Member]) -> list[Member]:
    """Members with an empty FastSlot each (XGBoost answers), queued for a background build
    that fills it (see ``xgboost.fast``)."""
    slotted = [replace(m, fast=FastSlot()) for m in members]
    for member in slotted:
        start(member, _xgboost_predict)
    return slotted


def majority_vote(labels: Sequence[np.ndarray], n_classes: int) -> np.ndarray:
    """Most common label per row across ensemble members, lowest label on ties, as float32.

    labels : one ndarray of shape (n_rows,) per member, holding whole class indices
    """
    rows = np.arange(labels[0].shape[0])
    counts = np.zeros((rows.size, n_classes), dtype=np.int64)
    for member_labels in labels:  # one vectorised step per member, not per row
        counts[rows, member_labels.astype(np.int64)] += 1
    return np.asarray(counts.argmax(axis=1), dtype=np.float32)


def _hint(expected: int, got: int) -> str:
    if got == expected - 1:
        return " (set SMSERVE_ALLOW_ONE_FEWER_FEATURE=true to treat the last one as missing)"
    return ""


def _model_paths(model_dir: Path, settings: Settings) -> list[Path]:
    paths = candidate_files(model_dir)
    if not paths:
        raise ModelLoadError(
            f"no model files in {model_dir}: expected {MODEL_NAME} "
            f"(or {MODEL_NAME}-<i> files for a k-fold ensemble)"
        )
    if len(paths) > 1 and not settings.ensemble:
        ignored = ", ".join(p.name for p in paths[1:])
        logger.info("ensemble off: serving %s, ignoring %s", paths[0].name, ignored)
        return paths[:1]
    return paths


def _output_plan(settings: Settings, info: ModelInfo) -> OutputPlan | None:
    if settings.inference_output is None:
        return None
    return OutputPlan.build(settings.inference_output, info.objective, info.num_target)


def _shared_info(members: Sequence[Member]) -> ModelInfo:
    info = read_info(members[0])
    check_supported(info, members[0].path)
    for member in members[1:]:
        other = read_info(member)
        if other != info:
            raise ModelLoadError(
                f"ensemble members disagree: {members[0].path.name} has {info}, "
                f"{member.path.name} has {other}"
            )
    if len(members) > 1:
        logger.info("ensemble of %d models (%s)", len(members), info.objective)
    return info
