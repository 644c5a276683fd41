"""Weighted k-means++ seeding and Lloyd's algorithm, in float64 numpy, for the two small problems
of k-means training: picking the K starting centres from a pool of rows (``kmeans_fit``) and
reducing the K trained centres to k (``kmeans_reduce``). Both run on the master, on at most
``max(mini_batch_size, K)`` points, so plain numpy is enough, and a k-means job does not import
scikit-learn (whose import alone took 0.9 s of a training job on this project's machine).

* ``plusplus``: greedy k-means++ (Arthur and Vassilvitskii; scikit-learn's default too): the
  first centre is drawn in proportion to weight, each next one is the best, by weighted
  inertia, of ``2 + ln n`` candidates drawn in proportion to weight times squared distance to
  the nearest centre so far.
* ``random_start``: distinct points drawn in proportion to weight. ``STARTS`` names both.
* ``lloyd``: Lloyd's iterations on weighted points. A centre left without points moves to the
  point farthest from its own centre. The run stops after ``max_iter`` iterations, or once the
  centres' summed squared shift is at most ``tol`` times the mean per-feature variance of the
  points (scikit-learn's ``tol``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from smserve.training.kmeans_distances import squared_distances

Matrix = npt.NDArray[np.float64]
Vector = npt.NDArray[np.float64]


def plusplus(points: Matrix, weights: Vector, n: int, rng: np.random.Generator) -> Matrix:
    """``n`` of ``points`` (n at most their number) by greedy weighted k-means++."""
    trials = 2 + int(math.log(n))
    first = int(rng.choice(points.shape[0], p=weights / weights.sum()))
    chosen = [first]
    closest = squared_distances(points, points[[first]])[:, 0]
    for _ in range(1, n):
        index, closest = _next_center(points, weights, closest, trials, rng)
        chosen.append(index)
    return points[chosen].copy()


def _next_center(
    points: Matrix, weights: Vector, closest: Vector, trials: int, rng: np.random.Generator
) -> tuple[int, Vector]:
    """The best of ``trials`` candidates, and each point's squared distance once it is added."""
    mass = np.cumsum(weights * closest)
    if mass[-1] <= 0.0:  # every point sits on a centre already
        mass = np.cumsum(weights)
    drawn = np.searchsorted(mass, rng.random(trials) * mass[-1], side="right")
    candidates = np.minimum(drawn, points.shape[0] - 1)
    closer = np.minimum(closest[None, :], squared_distances(points[candidates], points))
    best = int(np.argmin(closer @ weights))
    return int(candidates[best]), closer[best]


def random_start(points: Matrix, weights: Vector, n: int, rng: np.random.Generator) -> Matrix:
    """``n`` distinct points drawn in proportion to weight (uniformly where every weight is
    the same, or fewer than ``n`` points have any)."""
    uniform = np.count_nonzero(weights) < n or bool(np.all(weights == weights[0]))
    p = None if uniform else weights / weights.sum()
    return points[np.sort(rng.choice(points.shape[0], n, replace=False, p=p))].copy()


Start = Callable[[Matrix, Vector, int, np.random.Generator], Matrix]
STARTS: dict[str, Start] = {"random": random_start, "kmeans++": plusplus}


def lloyd(
    points: Matrix, weights: Vector, start: Matrix, max_iter: int, tol: float
) -> tuple[Matrix, float]:
    """Weighted Lloyd's from ``start``: the centres and their weighted inertia."""
    limit = tol * float(np.mean(np.var(points, axis=0)))
    centers = start.copy()
    for _ in range(max_iter):
        nearest = squared_distances(points, centers).argmin(axis=1)
        moved = _weighted_means(points, weights, nearest, centers)
        shift = float(((moved - centers) ** 2).sum())
        centers = moved
        if shift <= limit:
            break
    return centers, float(squared_distances(points, centers).min(axis=1) @ weights)


def _weighted_means(
    points: Matrix, weights: Vector, nearest: npt.NDArray[np.intp], centers: Matrix
) -> Matrix:
    k = centers.shape[0]
    mass = np.bincount(nearest, weights=weights, minlength=k)
    sums = np.zeros_like(centers)
    np.add.at(sums, nearest, points * weights[:, None])
    held = mass > 0
    means = centers.copy()
    means[held] = sums[held] / mass[held, None]
    empty = np.flatnonzero(~held)
    if empty.size:
        means[empty] = _farthest(points, centers, nearest, empty.size)
    return means


def _farthest(points: Matrix, centers: Matrix, nearest: npt.NDArray[np.intp], n: int) -> Matrix:
    """The ``n`` points farthest from their own centres."""
    own = ((points - centers[nearest]) ** 2).sum(axis=1)
    return points[np.argsort(-own, kind="stable")[:n]]
