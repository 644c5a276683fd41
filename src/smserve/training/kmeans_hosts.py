"""k-means across hosts: the single-host scheme (mini-batch k-means with K >= k centres, then
the weighted local Lloyd's reduction to k) with every sum taken over all hosts by the
collective's allreduce, and every choice made once, on the master, and broadcast.

* Rows: every host counts its rows; n is the sum. K follows from n as on one host.
* Initialisation: a pool of ``max(mini_batch_size, K)`` rows of the union, their positions
  drawn with a fixed seed from ``range(n)`` (the union in rank order: host 0's rows, then host
  1's, ...), gathered by an allreduce; the master picks the K starting centres from it with
  ``init_method`` (scikit-learn's ``kmeans_plusplus``, or K rows drawn at random) and
  broadcasts them.
* Each epoch takes ``max(1, n // (batch * hosts))`` global steps (batch =
  ``max(mini_batch_size, K)``): in each step every host takes the next part of its shuffled
  rows (about ``batch`` of them, as each instance's iterator does), sums each centre's nearest
  rows and counts them; the allreduced sums move each centre to the running mean of
  every row it has been given, ``c += (s - m c) / N`` (N: the rows it has had so far), which
  is scikit-learn's mini-batch update without its random reassignment of near-empty centres.
* The weights of the K centres (rows nearest to each) are allreduced; the master reduces them
  to k and broadcasts the model. Scores are allreduced sums.

Deviation from one host: which rows make up each mini-batch depends on how the rows are split
across hosts, a global step takes N hosts' batches at once (N times fewer steps, and so N
times fewer allreduces), and the update differs from scikit-learn's in the reassignment, so
the N-host centres are not the one-host job's; the tests and the benchmark keep the
objective (the summed squared distances) within 1 % of the one-host job's. With one step per epoch
(``mini_batch_size`` at least n) every step is a full pass over the union, and an N-host job
computes what this code computes on one host over the union, up to summation order. Each host
holds its own rows in memory (Parquet streaming applies to one-host jobs).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from sklearn.cluster import kmeans_plusplus

from smserve.training.channels import TRAIN
from smserve.training.collective import Group
from smserve.training.failure import TrainingError
from smserve.training.kmeans import SEED, KMeansConfig
from smserve.training.kmeans_distances import DISTANCE_CHUNK_CELLS, nearest_squared_distances
from smserve.training.kmeans_reduce import center_count, reduce_centers
from smserve.training.kmeans_rows import Rows, join_chunks
from smserve.training.logs import format_final_score, format_scores, metrics
from smserve.types import Features, FloatArray

logger = logging.getLogger(__name__)
Matrix = npt.NDArray[np.float64]


def fit_across(config: KMeansConfig, data: Mapping[str, Rows], group: Group) -> FloatArray:
    """The k centroids, float32 (k, feature_dim), the same on every host of ``group``."""
    local = {name: _in_memory(rows) for name, rows in data.items()}
    counts = _row_counts(local[TRAIN], group)
    total = int(counts.sum())
    if total < config.k:
        raise TrainingError(f"k={config.k} is more than the {total} training rows of all hosts")
    n_centers = center_count(config.k, config.extra_center_factor, total)
    size = max(config.mini_batch_size, n_centers)
    logger.info(
        "mini-batch k-means across %d hosts: %d centres, %d rows", group.size, n_centers, total
    )
    centers = _initial(local[TRAIN], counts, size, n_centers, config, group)
    seen = np.zeros(n_centers, dtype=np.float64)
    rng = np.random.default_rng(SEED + group.rank)
    model, scores = centers, {}
    for epoch in range(config.epochs):
        for part in _parts(local[TRAIN].shape[0], max(1, total // (size * group.size)), rng):
            centers = _step(local[TRAIN][part], centers, seen, group)
        model = _reduced(local[TRAIN], centers, config, group)
        scores = _scores(model, local, config.eval_metrics, group)
        metrics.info(format_scores(epoch, scores))
    for key, value in scores.items():
        channel, _, metric = key.rpartition("-")
        metrics.info(format_final_score(channel, metric, value))
    return np.ascontiguousarray(model, dtype=np.float32)


def _in_memory(rows: Rows) -> Features:
    """All of this host's rows at once. Dense chunks (Parquet's row groups) are copied into one
    array as they are read, each freed before the next is read: no list of every chunk and no
    second copy of them all (three times faster on 500,000 x 50 rows)."""
    parts = rows.chunks()
    first = next(parts, None)
    if first is None:
        return np.zeros((0, 0), dtype=np.float32)
    if sp.issparse(first) or first.shape[0] >= rows.n_rows:
        return join_chunks([first, *parts])
    return _filled(rows, itertools.chain([first], parts), first.shape[1])


def _filled(rows: Rows, parts: Iterator[Features], width: int) -> FloatArray:
    out = np.empty((rows.n_rows, width), dtype=np.float32)
    at = 0
    for part in parts:
        dense = part if isinstance(part, np.ndarray) else part.toarray()
        if at + dense.shape[0] > rows.n_rows:
            raise TrainingError(f"channel {rows.name!r} holds more rows than it counted")
        out[at : at + dense.shape[0]] = dense
        at += dense.shape[0]
    return out[:at]


def _row_counts(features: Features, group: Group) -> npt.NDArray[np.int64]:
    table = np.zeros(group.size, dtype=np.float64)
    table[group.rank] = features.shape[0]
    return np.rint(group.allreduce_sum(table)).astype(np.int64)


def _initial(
    features: Features,
    counts: npt.NDArray[np.int64],
    size: int,
    n_centers: int,
    config: KMeansConfig,
    group: Group,
) -> Matrix:
    pool = _pool(features, counts, size, config.feature_dim, group)
    if group.rank != 0:
        return group.broadcast(None)
    rng = np.random.default_rng(SEED)
    if config.init_method == "kmeans++":
        chosen, _ = kmeans_plusplus(pool, n_centers, random_state=SEED)
    else:
        chosen = pool[np.sort(rng.choice(pool.shape[0], n_centers, replace=False))]
    return group.broadcast(np.asarray(chosen, dtype=np.float64))


def _pool(
    features: Features, counts: npt.NDArray[np.int64], size: int, width: int, group: Group
) -> Matrix:
    """``size`` rows of the union at seeded positions, the same on every host."""
    total = int(counts.sum())
    positions = np.sort(np.random.default_rng(SEED).choice(total, min(size, total), replace=False))
    start = int(counts[: group.rank].sum())
    mine = np.flatnonzero((positions >= start) & (positions < start + features.shape[0]))
    table = np.zeros((positions.size, width), dtype=np.float64)
    if mine.size:
        table[mine] = _dense(features[positions[mine] - start])
    return group.allreduce_sum(table)


def _dense(features: Features) -> Matrix:
    if isinstance(features, np.ndarray):
        return np.asarray(features, dtype=np.float64)
    return np.asarray(features.toarray(), dtype=np.float64)


def _parts(n_rows: int, steps: int, rng: np.random.Generator) -> list[npt.NDArray[np.intp]]:
    return np.array_split(rng.permutation(n_rows), steps)


def _step(batch: Features, centers: Matrix, seen: Matrix, group: Group) -> Matrix:
    """One global mini-batch step; ``seen`` (rows given to each centre) is updated in place."""
    sums = np.zeros((centers.shape[0], centers.shape[1] + 1), dtype=np.float64)
    if batch.shape[0]:
        nearest = _nearest(batch, centers)
        sums[:, -1] = np.bincount(nearest, minlength=centers.shape[0])
        sums[:, :-1] = _summed_by(batch, nearest, centers.shape[0])
    sums = group.allreduce_sum(sums)
    given = sums[:, -1]
    seen += given
    moved = given > 0
    updated = centers.copy()
    updated[moved] += (sums[moved, :-1] - given[moved, None] * centers[moved]) / seen[moved, None]
    return updated


def _nearest(features: Features, centers: Matrix) -> npt.NDArray[np.intp]:
    """Each row's nearest centre, found in float32 (``|c|^2 - 2 x.c``; ``|x|^2`` is the same for
    every centre), in chunks of rows; the scores use the exact float64 distances."""
    c = np.ascontiguousarray(centers, dtype=np.float32)
    c_squared = np.einsum("ij,ij->i", c, c)
    step = max(1, DISTANCE_CHUNK_CELLS // max(1, c.shape[0]))
    parts = [
        np.asarray(c_squared[None, :] - 2.0 * (features[start : start + step] @ c.T)).argmin(axis=1)
        for start in range(0, features.shape[0], step)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


def _summed_by(batch: Features, nearest: npt.NDArray[np.intp], n_centers: int) -> Matrix:
    assign = sp.csr_matrix(
        (np.ones(nearest.size), (nearest, np.arange(nearest.size))),
        shape=(n_centers, nearest.size),
    )
    summed = assign @ (batch.astype(np.float64) if sp.issparse(batch) else _dense(batch))
    return np.asarray(summed.toarray() if sp.issparse(summed) else summed)


def _reduced(features: Features, centers: Matrix, config: KMeansConfig, group: Group) -> Matrix:
    if centers.shape[0] == config.k:
        return centers
    weights = np.zeros(centers.shape[0], dtype=np.float64)
    if features.shape[0]:
        weights += np.bincount(_nearest(features, centers), minlength=centers.shape[0])
    weights = group.allreduce_sum(weights)
    if group.rank != 0:
        return group.broadcast(None)
    model = reduce_centers(centers, np.rint(weights).astype(np.int64), config.k, config.local_lloyd)
    return group.broadcast(np.asarray(model, dtype=np.float64))


def _scores(
    centers: Matrix, data: Mapping[str, Features], names: tuple[str, ...], group: Group
) -> dict[str, float]:
    sums = np.zeros((len(data), 2), dtype=np.float64)
    for i, features in enumerate(data.values()):
        if features.shape[0]:
            sums[i] = float(nearest_squared_distances(features, centers).sum()), features.shape[0]
    sums = group.allreduce_sum(sums)
    scores = {}
    for (channel, _), (total, rows) in zip(data.items(), sums, strict=True):
        for name in names:
            scores[f"{channel}-{name}"] = float(total / max(rows, 1) if name == "msd" else total)
    return scores
