"""Mini-batch k-means on one host or many: the same code, with every sum taken over the hosts
of the group by the collective's allreduce (one host: the sums are its own), and every choice
made once, on the master, and broadcast. So an N-host job computes what one host computes on
the union of the rows, except for which rows make up each mini-batch.

* Rows: every host counts its rows; n is the sum. K (the centres trained) follows from n.
* Initialisation: a pool of ``max(mini_batch_size, K)`` rows of the union, their positions
  drawn with a fixed seed from ``range(n)`` (the union in rank order: host 0's rows, then host
  1's, ...), gathered by an allreduce; the master picks the K starting centres from it with
  ``init_method`` (greedy k-means++, ``kmeans_lloyd.plusplus``, or K rows drawn at random) and
  broadcasts them. The same on any number of hosts.
* Each epoch takes ``max(1, n // (batch * hosts))`` global steps (batch =
  ``max(mini_batch_size, K)``). In each step every host takes its next mini-batch of about
  ``batch`` rows (``kmeans_rows.mini_batches``: its rows shuffled with a fixed seed, cut in
  equal parts), finds each row's nearest centre and sums the rows and counts per centre; the
  allreduced sums move each centre to the running mean of every row it has been given,
  ``c += (s - m c) / N`` (N: the rows it has had so far).
* The weights of the K centres (the rows nearest to each) are allreduced; the master reduces
  them to k (``kmeans_reduce``) and broadcasts the model. The scores are allreduced sums.

One host therefore takes n / batch steps of one batch, N hosts n / (N batch) steps of N
batches. Which rows share a step depends on the split, so the centres of an N-host job are
not the one-host job's; the tests and the benchmark keep the objective (the summed squared
distances) within 1 % of it. With ``mini_batch_size`` at least n, every step is a full pass
and N hosts compute what one host computes, up to the order of the sums.

Each pass reads the rows through ``Rows.chunks``: all at once when they are in memory, one
Parquet row group (and one mini-batch) at a time when the channel is streamed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from smserve.scipy_sparse import sparse as sp
from smserve.training.channels import TRAIN
from smserve.training.collective import Group
from smserve.training.failure import TrainingError
from smserve.training.kmeans_config import SEED, KMeansConfig
from smserve.training.kmeans_distances import nearest_centers, nearest_squared_distances
from smserve.training.kmeans_lloyd import STARTS
from smserve.training.kmeans_reduce import center_count, reduce_centers
from smserve.training.kmeans_rows import Rows, mini_batches, rows_at
from smserve.training.logs import format_final_score, format_scores, metrics
from smserve.types import Features, FloatArray

logger = logging.getLogger(__name__)
Matrix = npt.NDArray[np.float64]


def fit(config: KMeansConfig, data: Mapping[str, Rows], group: Group) -> FloatArray:
    """The k centroids, float32 (k, feature_dim), the same on every host of ``group``;
    ``data`` holds this host's rows of each channel (``train`` first)."""
    train = data[TRAIN]
    counts = _row_counts(train.n_rows, group)
    total = int(counts.sum())
    if total < config.k:
        raise TrainingError(f"k={config.k} is more than the {_rows_of(total, group)}")
    n_centers = center_count(config.k, config.extra_center_factor, total)
    size = max(config.mini_batch_size, n_centers)
    _log_plan(config, n_centers, total, group)
    centers = _initial(train, counts, size, n_centers, config, group)
    seen = np.zeros(n_centers, dtype=np.float64)
    rng = np.random.default_rng(SEED + group.rank)
    steps = max(1, total // (size * group.size))
    model, scores = centers, {}
    for epoch in range(config.epochs):
        for batch in mini_batches(train, steps, size, rng):
            centers = _step(batch, centers, seen, group)
        model = _reduced(train, centers, config, group)
        scores = _scores(model, data, config.eval_metrics, group)
        metrics.info(format_scores(epoch, scores))
    for key, value in scores.items():
        channel, _, metric = key.rpartition("-")
        metrics.info(format_final_score(channel, metric, value))
    return np.ascontiguousarray(model, dtype=np.float32)


def _rows_of(total: int, group: Group) -> str:
    return f"{total} training rows" + (" of all hosts" if group.size > 1 else "")


def _log_plan(config: KMeansConfig, n_centers: int, total: int, group: Group) -> None:
    where = f" across {group.size} hosts" if group.size > 1 else ""
    logger.info(
        "mini-batch k-means with %d centres for k=%d%s, %d rows",
        n_centers,
        config.k,
        where,
        total,
    )
    if n_centers > config.k:
        lloyd = config.local_lloyd
        logger.info(
            "then reducing them to k by weighted Lloyd's: init %s, %d trial(s), max_iter %d, "
            "tol %g",
            lloyd.init_method,
            lloyd.trials,
            lloyd.max_iter,
            lloyd.tol,
        )


def _row_counts(n_rows: int, group: Group) -> npt.NDArray[np.int64]:
    table = np.zeros(group.size, dtype=np.float64)
    table[group.rank] = n_rows
    return np.rint(group.allreduce_sum(table)).astype(np.int64)


def _initial(
    rows: Rows,
    counts: npt.NDArray[np.int64],
    size: int,
    n_centers: int,
    config: KMeansConfig,
    group: Group,
) -> Matrix:
    pool = _pool(rows, counts, size, config.feature_dim, group)
    if group.rank != 0:
        return group.broadcast(None)
    start = STARTS[config.init_method]
    chosen = start(pool, np.ones(pool.shape[0]), n_centers, np.random.default_rng(SEED))
    return group.broadcast(chosen)


def _pool(rows: Rows, counts: npt.NDArray[np.int64], size: int, width: int, group: Group) -> Matrix:
    """``size`` rows of the union at seeded positions, the same on every host."""
    total = int(counts.sum())
    positions = np.sort(np.random.default_rng(SEED).choice(total, min(size, total), replace=False))
    start = int(counts[: group.rank].sum())
    mine = np.flatnonzero((positions >= start) & (positions < start + rows.n_rows))
    table = np.zeros((positions.size, width), dtype=np.float64)
    if mine.size:
        table[mine] = _dense(rows_at(rows, positions[mine] - start))
    return group.allreduce_sum(table)


def _dense(features: Features) -> Matrix:
    if isinstance(features, np.ndarray):
        return np.asarray(features, dtype=np.float64)
    return np.asarray(features.toarray(), dtype=np.float64)


def _step(batch: Features, centers: Matrix, seen: Matrix, group: Group) -> Matrix:
    """One global mini-batch step; ``seen`` (rows given to each centre) is updated in place."""
    sums = np.zeros((centers.shape[0], centers.shape[1] + 1), dtype=np.float64)
    if batch.shape[0]:
        nearest = nearest_centers(batch, centers)
        sums[:, -1] = np.bincount(nearest, minlength=centers.shape[0])
        sums[:, :-1] = _summed_by(batch, nearest, centers.shape[0])
    sums = group.allreduce_sum(sums)
    given = sums[:, -1]
    seen += given
    moved = given > 0
    updated = centers.copy()
    updated[moved] += (sums[moved, :-1] - given[moved, None] * centers[moved]) / seen[moved, None]
    return updated


def _summed_by(batch: Features, nearest: npt.NDArray[np.intp], n_centers: int) -> Matrix:
    assign = sp.csr_matrix(
        (np.ones(nearest.size), (nearest, np.arange(nearest.size))),
        shape=(n_centers, nearest.size),
    )
    summed = assign @ (batch.astype(np.float64) if sp.issparse(batch) else _dense(batch))
    return np.asarray(summed.toarray() if sp.issparse(summed) else summed)


def _reduced(rows: Rows, centers: Matrix, config: KMeansConfig, group: Group) -> Matrix:
    """The k model centres: the K trained ones when K == k, else reduced on the master."""
    if centers.shape[0] == config.k:
        return centers
    weights = np.zeros(centers.shape[0], dtype=np.float64)
    for chunk in rows.chunks():
        if chunk.shape[0]:
            weights += np.bincount(nearest_centers(chunk, centers), minlength=centers.shape[0])
    weights = group.allreduce_sum(weights)
    if group.rank != 0:
        return group.broadcast(None)
    model = reduce_centers(centers, np.rint(weights).astype(np.int64), config.k, config.local_lloyd)
    return group.broadcast(np.asarray(model, dtype=np.float64))


def _scores(
    centers: Matrix, data: Mapping[str, Rows], names: tuple[str, ...], group: Group
) -> dict[str, float]:
    """``{"<channel>-<metric>": value}``: msd and ssd over every host's rows of each channel."""
    sums = np.zeros((len(data), 2), dtype=np.float64)
    for i, rows in enumerate(data.values()):
        for chunk in rows.chunks():
            if chunk.shape[0]:
                sums[i] += float(nearest_squared_distances(chunk, centers).sum()), chunk.shape[0]
    sums = group.allreduce_sum(sums)
    scores = {}
    for (channel, _), (total, n_rows) in zip(data.items(), sums, strict=True):
        for name in names:
            scores[f"{channel}-{name}"] = float(total / max(n_rows, 1) if name == "msd" else total)
    return scores
