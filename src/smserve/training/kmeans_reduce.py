"""The built-in k-means over-sampling: how many centres to train, and the local Lloyd's step that
reduces them to k.

Mini-batch k-means trains K = k * ``extra_center_factor`` centres (never more than the training
rows). Each centre is then weighted by the number of training rows nearest to it, and a weighted
k-means (Lloyd's algorithm, ``kmeans_lloyd``) on those K weighted points gives the k centres of
the model. It starts from ``local_lloyd_init_method``, runs
``local_lloyd_num_trials`` times keeping the lowest loss, for at most ``local_lloyd_max_iter``
iterations each, stopping early by ``local_lloyd_tol``.

Values and defaults (AWS documents the ranges and defaults but not what ``auto`` means):

* ``extra_center_factor``: positive integer or ``auto`` (default). ``auto`` is
  ``max(10, ceil(ln n))`` for n training rows, after the O(k log n) centres that streaming
  k-means keeps; at least 10 so that a random start almost surely puts a centre in every real
  cluster. ``1`` turns the over-sampling off: k centres are trained and used directly.
* ``local_lloyd_init_method``: ``kmeans++`` (default) or ``random``; both draw points in
  proportion to their weight.
* ``local_lloyd_num_trials``: positive integer or ``auto`` (default). ``auto`` is 1 trial after
  ``kmeans++`` and 10 after ``random`` (scikit-learn's ``n_init="auto"`` rule). The trials
  draw from one generator seeded with 0, so a job is reproducible.
* ``local_lloyd_max_iter``: positive integer, default 300.
* ``local_lloyd_tol``: a number in [0, 1], default 0.0001, as scikit-learn's ``tol``: the run
  stops when the centres' summed squared shift is at most tol times the mean per-feature
  variance of the K points (AWS describes a tolerance on the change in loss; both end a
  converged run early).

Centres that no training row is nearest to get weight 0 and take no part. If no more than k
centres keep a weight, the k heaviest centres are the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from smserve.training.failure import TrainingError
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.kmeans_lloyd import STARTS, lloyd

AUTO = "auto"
INIT_METHODS = tuple(STARTS)
MIN_AUTO_FACTOR = 10
AUTO_TRIALS = {"kmeans++": 1, "random": 10}


@dataclass(frozen=True)
class LocalLloyd:
    """The ``local_lloyd_*`` hyperparameters; ``num_trials=None`` means ``auto``."""

    init_method: str = "kmeans++"
    max_iter: int = 300
    num_trials: int | None = None
    tol: float = 0.0001

    @classmethod
    def from_hyperparameters(cls, hp: Hyperparameters) -> LocalLloyd:
        tol = hp.optional_number("local_lloyd_tol", minimum=0.0, maximum=1.0)
        return cls(
            init_method=hp.optional_choice("local_lloyd_init_method", INIT_METHODS)
            or cls.init_method,
            max_iter=hp.integer("local_lloyd_max_iter", cls.max_iter, minimum=1),
            num_trials=integer_or_auto(hp, "local_lloyd_num_trials"),
            tol=cls.tol if tol is None else tol,
        )

    @property
    def trials(self) -> int:
        """The number of runs, with ``auto`` resolved."""
        return self.num_trials or AUTO_TRIALS[self.init_method]


def integer_or_auto(hp: Hyperparameters, name: str) -> int | None:
    """A positive integer, or None for ``auto`` or an absent value."""
    text = hp.text(name)
    if text is None or text.lower() == AUTO:
        return None
    try:
        return hp.optional_integer(name, minimum=1)
    except TrainingError:
        raise TrainingError(
            f"hyperparameter {name}={text!r} must be a positive integer or {AUTO!r}"
        ) from None


def center_count(k: int, extra_center_factor: int | None, n_rows: int) -> int:
    """K, the number of centres mini-batch k-means trains (``None`` factor means ``auto``)."""
    factor = extra_center_factor or auto_factor(n_rows)
    return max(k, min(k * factor, n_rows))


def auto_factor(n_rows: int) -> int:
    """``extra_center_factor=auto``: ``max(10, ceil(ln n_rows))``."""
    return max(MIN_AUTO_FACTOR, math.ceil(math.log(max(n_rows, 1))))


def reduce_centers(
    centers: npt.NDArray[np.floating],
    weights: npt.NDArray[np.integer],
    k: int,
    lloyd_settings: LocalLloyd,
) -> npt.NDArray[np.floating]:
    """The k centres of a weighted k-means on ``centers`` (shape K x d, K >= k)."""
    live = weights > 0
    if np.count_nonzero(live) <= k:
        return _heaviest(centers, weights, k)
    points, mass = np.asarray(centers[live], np.float64), weights[live].astype(np.float64)
    start, rng = STARTS[lloyd_settings.init_method], np.random.default_rng(0)
    runs = [
        lloyd(
            points, mass, start(points, mass, k, rng), lloyd_settings.max_iter, lloyd_settings.tol
        )
        for _ in range(lloyd_settings.trials)
    ]
    return min(runs, key=lambda run: run[1])[0]


def _heaviest(
    centers: npt.NDArray[np.floating], weights: npt.NDArray[np.integer], k: int
) -> npt.NDArray[np.floating]:
    keep = np.sort(np.argsort(-weights, kind="stable")[:k])
    return centers[keep]
