"""Per-row explanations of XGBoost predictions: SHAP values of the margin.

``contributions`` are XGBoost's exact TreeSHAP (``pred_contribs``), ``approximate_contributions``
its cheaper approximation (``approx_contribs``: each split's gain in the expected value along
the row's path; for batches over SMALL_BATCH_ROWS rows on cpu, computed as one vector-leaf
prediction by ``xgboost.approximate``, equal to XGBoost's within float32 rounding). Both are of
the raw margin, before the objective's link function (sigmoid, softmax), so a row's values sum
to its margin, never to its probability.

Layout, XGBoost's own: per row one value per model feature, in the model's feature order,
then the bias (the expected margin, base score included) last; multi-class and multi-target
models give one such vector per class or target. On a booster configured for cuda
(SMSERVE_XGBOOST_DEVICE) XGBoost computes exact contributions on the GPU (GPUTreeShap), and
approximate ones on a cpu copy of the booster: its GPU predictor does not implement them.
"""

from __future__ import annotations

import numpy as np
import xgboost as xgb

from smserve.algorithms.xgboost.approximate import ApproximateExplainer
from smserve.algorithms.xgboost.model import SMALL_BATCH_ROWS, Member
from smserve.errors import PredictionError
from smserve.types import Features


def explain(
    member: Member, features: Features, approximate: bool, nthread: int, spare_cpu: bool = False
) -> np.ndarray:
    """Contributions of one booster for at least one row, float32; ``nthread`` builds the
    DMatrix (the worker's share of the cores, as the booster has). ``spare_cpu`` is honoured
    by the vector-leaf approximation only: XGBoost's own contributions cost from several to a
    hundred predictions, beside which writing them is nothing, so a spared CPU would idle.

    features : dense (n, F) or CSR; absent CSR entries and NaN are missing values alike, so
        sparse input explains as its dense equivalent with NaN does.
    Returns an ndarray of shape (n, F + 1), or (n, k, F + 1) for k classes or targets.
    """
    n_rows = int(features.shape[0])
    explainer = _fast_approximation(member, n_rows) if approximate else None
    if explainer is not None:
        return _approximated(explainer, features, member, spare_cpu)
    booster = _booster_for(member, n_rows, approximate)
    # A small batch is one thread's work, as in xgboost.model: a DMatrix built with more
    # threads makes the explanation wait on the others (measured: 0.46 ms vs 7 ms, 1 row).
    threads = 1 if n_rows <= SMALL_BATCH_ROWS else nthread
    try:
        matrix = xgb.DMatrix(features, missing=np.nan, nthread=threads)
        result = booster.predict(
            matrix,
            pred_contribs=True,
            approx_contribs=approximate,
            iteration_range=member.iteration_range,
            validate_features=False,
        )
    except xgb.core.XGBoostError as exc:
        raise PredictionError(f"XGBoost failed to explain with {member.path.name}") from exc
    return np.asarray(result, dtype=np.float32)


def _booster_for(member: Member, n_rows: int, approximate: bool) -> xgb.Booster:
    """The member's booster for the batch; for approximate contributions of a booster on
    cuda, its cpu copy (XGBoost's GPU predictor has no approximation)."""
    if approximate and member.on_cpu is not None:
        return member.on_cpu
    return member.booster_for(n_rows)


def _fast_approximation(member: Member, n_rows: int) -> ApproximateExplainer | None:
    """The vector-leaf explainer for a batch too large for one thread, if it exists."""
    if n_rows <= SMALL_BATCH_ROWS or member.approximation is None:
        return None
    return member.approximation.get()


def _approximated(
    explainer: ApproximateExplainer, features: Features, member: Member, spare_cpu: bool
) -> np.ndarray:
    try:
        return explainer.explain(features, spare_cpu)
    except xgb.core.XGBoostError as exc:
        raise PredictionError(f"XGBoost failed to explain with {member.path.name}") from exc
