"""XGBoost's approximate contributions (``approx_contribs``) as one ordinary prediction.

XGBoost's approximation (Saabas' method) credits each split on a row's path with the change it
makes to the expected value (the cover-weighted mean of the leaves below a node), to the split's
feature; the bias is the root's expected value, plus the base margin. Summed over a tree, those
credits depend only on the leaf the row reaches. XGBoost adds them row by row and tree by tree
through a dense (features + 1) vector it fills and sums each time (about 57 ns per tree-row on
one core here, seven to eight plain predictions for the benchmark model).

``ApproximateExplainer`` writes, once per booster, a booster of XGBoost's vector-leaf
(multi-target) trees with the same splits, whose leaf vectors are those per-leaf sums: its
margin *is* the approximation, and XGBoost's ordinary prediction computes it in one traversal
per tree (3-4x faster than ``approx_contribs`` for the benchmark model). One such booster per
output group (class, or target of a one-output-per-tree model); the base margin is added after.

The written model is XGBoost 3's multi-target tree layout (``leaf_weights``, each leaf's index
in its ``right_children`` entry). ``ApproximateExplainer.create`` returns None, and XGBoost's
own ``approx_contribs`` stays in use, unless that model loads and agrees with
``approx_contribs`` within float32 rounding on probe rows that follow the trees' own splits,
missing values included; and for what it does not cover: DART and linear boosters, categorical
splits, vector-leaf models, trees with deleted nodes, or more than MAX_WEIGHTS leaf values.

For a worker's share of two CPUs the explainer also keeps single-threaded copies of its
boosters, for predictions that spare a CPU (see ``overlap``), if they explain the probe rows
bit for bit alike; and it predicts through ``xgboost.direct``'s C API calls (0.09 ms less per
call) if they agree with ``inplace_predict`` on that predictor's own probes.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import orjson
import xgboost as xgb

from smserve.algorithms.xgboost.direct import DirectPredictor
from smserve.algorithms.xgboost.vector_leaf import vector_leaf_booster
from smserve.types import Features

logger = logging.getLogger(__name__)

MAX_WEIGHTS = 16 * 1024 * 1024  # float32 leaf values across the written trees (64 MiB)
PROBE_ROWS = 96
_TOLERANCE = 1e-5  # relative to the largest contribution: float32 sums of many trees


def spares_by_one_thread(nthread: int) -> bool:
    """Whether a prediction that spares a CPU runs on single-threaded copies: with a share of
    two CPUs (one has none to spare; for more, one thread fewer would take another copy)."""
    return nthread == 2


@dataclass(frozen=True, slots=True)
class ApproximateExplainer:
    """``approx_contribs`` of one booster: one vector-leaf booster per output group, and the
    group's base margin (added to the bias)."""

    boosters: tuple[xgb.Booster, ...]
    base_margins: np.ndarray  # (groups,)
    spare: tuple[xgb.Booster, ...] = ()  # the boosters with nthread=1, for a share of two CPUs
    direct: DirectPredictor | None = None  # their margins through the C API (xgboost.direct)

    @classmethod
    def create(
        cls, booster: xgb.Booster, iteration_range: tuple[int, int], nthread: int
    ) -> ApproximateExplainer | None:
        """The explainer, if it can be written for ``booster`` and agrees with XGBoost."""
        try:
            learner = orjson.loads(booster.save_raw("json"))["learner"]
            groups = _written_groups(learner, iteration_range, nthread)
        except (KeyError, TypeError, ValueError, xgb.core.XGBoostError) as exc:
            logger.info("approximate contributions through XGBoost itself: %s", exc)
            return None
        if groups is None:
            return None
        rows = probe_rows(learner)
        explainer = _checked(groups, booster, iteration_range, rows)
        if explainer is None:
            return None
        explainer = explainer.with_spare(rows) if spares_by_one_thread(nthread) else explainer
        boosters = [*explainer.boosters, *explainer.spare]
        direct = DirectPredictor.create(boosters, (0, 0), learner_features(learner))
        return replace(explainer, direct=direct)

    def with_spare(self, rows: np.ndarray) -> ApproximateExplainer:
        """This explainer with single-threaded copies of its boosters for ``explain(...,
        spare_cpu=True)``, kept only if they explain ``rows`` bit for bit alike. They hold
        the leaf values twice: at most MAX_WEIGHTS more, 64 MiB, as ``Member.single`` holds
        a model of up to 128 MB twice."""
        copies = tuple(b.copy() for b in self.boosters)
        for copy in copies:
            copy.set_param({"nthread": 1})
        pairs = zip(self.boosters, copies, strict=True)
        if all(np.array_equal(_margin(a, rows), _margin(b, rows), True) for a, b in pairs):
            return replace(self, spare=copies)
        logger.warning("approximate contributions: a single-threaded copy differs; not used")
        return self

    def explain(self, features: Features, spare_cpu: bool = False) -> np.ndarray:
        """(n, F + 1), or (n, groups, F + 1) for several groups, float32; ``spare_cpu``: on
        one thread where the explainer has single-threaded copies."""
        boosters = self.spare if spare_cpu and self.spare else self.boosters
        parts = [self._margin(b, features) for b in boosters]
        out = np.stack(parts, axis=1) if len(parts) > 1 else parts[0][:, None, :]
        out[:, :, -1] += self.base_margins
        return out if len(parts) > 1 else out[:, 0, :]

    def _margin(self, booster: xgb.Booster, features: Features) -> np.ndarray:
        if self.direct is None:
            return _margin(booster, features)
        return self.direct.predict(booster, features, margin=True)


@dataclass(slots=True)
class LazyApproximation:
    """An ApproximateExplainer written on first use (not at load: most endpoints never ask),
    once per booster whatever the number of threads asking."""

    booster: xgb.Booster
    iteration_range: tuple[int, int]
    nthread: int
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _done: bool = False
    _explainer: ApproximateExplainer | None = None

    def get(self) -> ApproximateExplainer | None:
        if not self._done:
            with self._lock:
                if not self._done:
                    self._explainer = ApproximateExplainer.create(
                        self.booster, self.iteration_range, self.nthread
                    )
                    self._done = True
        return self._explainer


def learner_features(learner: dict[str, Any]) -> int:
    return int(learner["learner_model_param"]["num_feature"])


def _margin(booster: xgb.Booster, features: Features) -> np.ndarray:
    result = booster.inplace_predict(
        features, predict_type="margin", missing=np.nan, validate_features=False
    )
    return np.array(result, dtype=np.float32, copy=True)


def _written_groups(
    learner: dict[str, Any], iteration_range: tuple[int, int], nthread: int
) -> list[xgb.Booster] | None:
    """One vector-leaf booster per output group, or None when the model is not covered."""
    booster = learner["gradient_booster"]
    if booster["name"] != "gbtree":
        return None
    trees, tree_info = _trees_in_range(booster["model"], iteration_range)
    n_features = learner_features(learner)
    if not n_features or not all(_covered(t) for t in trees) or not trees:
        return None
    if _weights_needed(trees, n_features) > MAX_WEIGHTS:
        logger.info("approximate contributions through XGBoost itself: the model is too large")
        return None
    n_groups = max(tree_info) + 1
    members = [
        [t for t, g in zip(trees, tree_info, strict=True) if g == group]
        for group in range(n_groups)
    ]
    return [vector_leaf_booster(group, n_features, nthread) for group in members]


def _trees_in_range(
    model: dict[str, Any], iteration_range: tuple[int, int]
) -> tuple[list[Any], list[int]]:
    trees, tree_info = model["trees"], [int(g) for g in model["tree_info"]]
    end = iteration_range[1]
    if end > 0:
        stop = int(model["iteration_indptr"][end])
        trees, tree_info = trees[:stop], tree_info[:stop]
    return trees, tree_info


def _covered(tree: dict[str, Any]) -> bool:
    param = tree["tree_param"]
    plain = int(param.get("size_leaf_vector", "1")) <= 1 and int(param["num_deleted"]) == 0
    return plain and not any(tree["split_type"])


def _weights_needed(trees: list[Any], n_features: int) -> int:
    return sum(len(t["left_children"]) for t in trees) * (n_features + 1)


def _checked(
    boosters: list[xgb.Booster],
    source: xgb.Booster,
    iteration_range: tuple[int, int],
    rows: np.ndarray,
) -> ApproximateExplainer | None:
    reference = np.asarray(
        source.predict(
            xgb.DMatrix(rows, missing=np.nan),
            pred_contribs=True,
            approx_contribs=True,
            iteration_range=iteration_range,
            validate_features=False,
        ),
        dtype=np.float64,
    )
    grouped = reference if reference.ndim == 3 else reference[:, None, :]
    written = np.stack([_margin(b, rows) for b in boosters], axis=1).astype(np.float64)
    base = grouped[0, :, -1] - written[0, :, -1]
    written[:, :, -1] += base
    scale = max(1.0, float(np.abs(grouped).max()))
    if grouped.shape != written.shape or not np.allclose(
        written, grouped, rtol=0, atol=_TOLERANCE * scale
    ):
        logger.warning(
            "approximate contributions: the vector-leaf model disagrees with XGBoost; not used"
        )
        return None
    return ApproximateExplainer(tuple(boosters), base.astype(np.float32))


def probe_rows(learner: dict[str, Any]) -> np.ndarray:
    """Rows whose values sit just either side of the model's own split thresholds, with some
    missing values, so that probes take the trees' branches, default directions included."""
    rng = np.random.default_rng(20261201)
    thresholds = _thresholds(learner)
    rows = np.empty((PROBE_ROWS, len(thresholds)), dtype=np.float32)
    for column, values in enumerate(thresholds):
        picked = rng.choice(values, PROBE_ROWS) if len(values) else np.zeros(PROBE_ROWS)
        rows[:, column] = picked + rng.choice([-1e-3, 1e-3], PROBE_ROWS) * (1 + np.abs(picked))
    rows[rng.random(rows.shape) < 0.1] = np.nan
    rows[0] = np.nan  # the all-missing row
    return rows


def _thresholds(learner: dict[str, Any]) -> list[np.ndarray]:
    """Per feature, the thresholds the model splits it at."""
    found: list[list[float]] = [[] for _ in range(learner_features(learner))]
    for tree in learner["gradient_booster"]["model"]["trees"]:
        for node, child in enumerate(tree["left_children"]):
            if child != -1:
                found[tree["split_indices"][node]].append(tree["split_conditions"][node])
    return [np.asarray(values, dtype=np.float64) for values in found]
