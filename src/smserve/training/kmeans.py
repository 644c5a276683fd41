"""k-means training, the built-in algorithm's scheme: mini-batch k-means over the train channel
with more centres than k, reduced to k by a local Lloyd's step; the centroids go to
``model_algo-1`` (float32, k x feature_dim) in the MXNet NDArray format the built-in writes.

Each epoch shuffles the rows (fixed seed) and feeds them to scikit-learn's ``MiniBatchKMeans``
``partial_fit`` in mini-batches of ``mini_batch_size`` rows (at least K); the first batch
initialises the K = k * ``extra_center_factor`` centres with ``init_method``. The K centres are
then weighted by the training rows nearest to each and reduced to k (see
:mod:`smserve.training.kmeans_reduce` for that step and the ``auto`` defaults). After each epoch
the mean or sum of squared distances to the nearest of the k reduced centres is logged per
channel (``[epoch]#011train-msd:...``), and the final scores once more in the
``#train_score (algo-1) : ('msd', ...)`` form. ``half_life_time_size`` is validated but has no
effect (scikit-learn's mini-batch update does not decay old points). Labels are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import MiniBatchKMeans

from smserve import media
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.training.channels import TRAIN, Channel
from smserve.training.collective import Group
from smserve.training.data import Dataset, read_channel
from smserve.training.failure import TrainingError
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.kmeans_distances import nearest_centers, nearest_squared_distances
from smserve.training.kmeans_reduce import (
    INIT_METHODS,
    LocalLloyd,
    center_count,
    integer_or_auto,
    reduce_centers,
)
from smserve.training.kmeans_rows import Rows, blocks
from smserve.training.logs import format_final_score, format_scores, metrics
from smserve.training.parquet import with_label_column
from smserve.training.plan import WHOLE, Share, has_data
from smserve.types import Features, FloatArray

logger = logging.getLogger(__name__)

MODEL_FILE = "model_algo-1"
SEED = 0
EVAL_METRICS = ("msd", "ssd")


@dataclass(frozen=True)
class KMeansConfig:
    """The k-means hyperparameters (defaults follow the built-in algorithm)."""

    k: int
    feature_dim: int
    init_method: str = "random"
    epochs: int = 1
    mini_batch_size: int = 5000
    eval_metrics: tuple[str, ...] = ("msd",)
    extra_center_factor: int | None = None  # None: auto
    local_lloyd: LocalLloyd = field(default_factory=LocalLloyd)

    @classmethod
    def from_hyperparameters(cls, hp: Hyperparameters) -> KMeansConfig:
        config = cls(
            k=hp.required_integer("k", minimum=1),
            feature_dim=hp.required_integer("feature_dim", minimum=1),
            init_method=hp.optional_choice("init_method", INIT_METHODS) or cls.init_method,
            epochs=hp.integer("epochs", cls.epochs, minimum=1),
            mini_batch_size=hp.integer("mini_batch_size", cls.mini_batch_size, minimum=1),
            eval_metrics=_eval_metrics(hp),
            extra_center_factor=integer_or_auto(hp, "extra_center_factor"),
            local_lloyd=LocalLloyd.from_hyperparameters(hp),
        )
        _check_half_life(hp)
        return config


def _check_half_life(hp: Hyperparameters) -> None:
    if hp.integer("half_life_time_size", 0, minimum=0):
        logger.info("hyperparameter half_life_time_size is accepted but has no effect here")


def _eval_metrics(hp: Hyperparameters) -> tuple[str, ...]:
    names = hp.names("eval_metrics") or KMeansConfig.eval_metrics
    unknown = [name for name in names if name not in EVAL_METRICS]
    if unknown:
        raise TrainingError(
            f"hyperparameter eval_metrics has unknown metric(s) {', '.join(unknown)}; "
            f"use {' or '.join(EVAL_METRICS)}"
        )
    return names


class KMeansTrainer:
    """Trains k-means; built-in k-means reads RecordIO-protobuf unless told otherwise."""

    name = "kmeans"
    default_content_type = media.RECORDIO

    def prepare(
        self, hp: Hyperparameters, channels: Mapping[str, Channel], share: Share = WHOLE
    ) -> KMeansJob:
        config = KMeansConfig.from_hyperparameters(hp)
        channels = with_label_column(channels, hp)
        hp.check_all_used(self.name)
        rows = {
            name: Rows(name, 0, lambda: iter(()))
            if share.may_lack(name) and not has_data(channel.path)
            else _rows(channel, config)
            for name, channel in channels.items()
        }
        return KMeansJob(
            config, {name: r.part(share.rows(name, r.n_rows)) for name, r in rows.items()}
        )


@dataclass(frozen=True)
class KMeansJob:
    """k-means with this host's rows; across hosts see :mod:`smserve.training.kmeans_hosts`."""

    config: KMeansConfig
    data: Mapping[str, Rows]

    @property
    def train_rows(self) -> int:
        return self.data[TRAIN].n_rows

    def run(self, group: Group, model_dir: Path | None) -> None:
        if group.size == 1:
            centers = fit_rows(self.config, self.data)
        else:
            from smserve.training.kmeans_hosts import fit_across

            centers = fit_across(self.config, self.data, group)
        if model_dir is not None:
            model_dir.mkdir(parents=True, exist_ok=True)
            write_ndarray_file(model_dir / MODEL_FILE, centers)
            logger.info("wrote %d centroids of %d features to %s", *centers.shape, model_dir)


def _rows(channel: Channel, config: KMeansConfig) -> Rows:
    """Parquet channels are streamed by row group; the other formats are read whole."""
    if channel.media.essence == media.PARQUET:
        return Rows.streamed(channel, lambda features, name: _checked(features, name, config))
    dataset = read_channel(channel)
    features = _checked(dataset.features, repr(dataset.name), config)
    return Rows.in_memory(Dataset(dataset.name, features, None))


def _checked(features: Features, name: str, config: KMeansConfig) -> Features:
    if features.shape[1] != config.feature_dim and not sp.issparse(features):
        raise TrainingError(
            f"channel {name} has {features.shape[1]} features but feature_dim={config.feature_dim}"
        )
    values = features.data if sp.issparse(features) else features
    if not np.isfinite(values).all():
        raise TrainingError(f"channel {name} has missing or infinite feature values")
    if features.shape[1] == config.feature_dim:
        return features
    if features.shape[1] > config.feature_dim:
        raise TrainingError(
            f"channel {name} has {features.shape[1]} features, expected {config.feature_dim}"
        )
    return sp.csr_matrix(features, shape=(features.shape[0], config.feature_dim))


def fit(config: KMeansConfig, data: Mapping[str, Dataset]) -> FloatArray:
    """The centroids, float32 of shape (k, feature_dim), fitted on ``data["train"]``."""
    return fit_rows(config, {name: Rows.in_memory(dataset) for name, dataset in data.items()})


def fit_rows(config: KMeansConfig, data: Mapping[str, Rows]) -> FloatArray:
    """As ``fit``, reading each channel chunk by chunk (see ``kmeans_rows``)."""
    train = data[TRAIN]
    if train.n_rows < config.k:
        raise TrainingError(f"k={config.k} is more than the {train.n_rows} training rows")
    n_centers = center_count(config.k, config.extra_center_factor, train.n_rows)
    _log_plan(config, n_centers)
    model = _model(config, n_centers)
    rng = np.random.default_rng(SEED)
    centers: np.ndarray = np.empty((0, config.feature_dim))
    scores: dict[str, float] = {}
    size = max(config.mini_batch_size, n_centers)
    for epoch in range(config.epochs):
        for block in blocks(train.chunks(), size):
            for rows in _batches(block.shape[0], size, rng):
                model.partial_fit(block[rows])
        centers = final_centers(model.cluster_centers_, train, config)
        scores = evaluate(centers, data, config.eval_metrics)
        metrics.info(format_scores(epoch, scores))
    _log_final(scores)
    return np.ascontiguousarray(centers, dtype=np.float32)


def final_centers(centers: np.ndarray, rows: Rows, config: KMeansConfig) -> np.ndarray:
    """The k model centres from the K trained ones: themselves when K == k, else reduced."""
    if centers.shape[0] == config.k:
        return centers
    weights = sum(
        np.bincount(nearest_centers(chunk, centers), minlength=centers.shape[0])
        for chunk in rows.chunks()
    )
    return reduce_centers(centers, np.asarray(weights), config.k, config.local_lloyd)


def _log_plan(config: KMeansConfig, n_centers: int) -> None:
    logger.info("mini-batch k-means with %d centres for k=%d", n_centers, config.k)
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


def _model(config: KMeansConfig, n_centers: int) -> MiniBatchKMeans:
    return MiniBatchKMeans(
        n_clusters=n_centers,
        init=INIT_METHODS[config.init_method],
        n_init=1,  # partial_fit initialises once, from the first mini-batch
        batch_size=config.mini_batch_size,
        compute_labels=False,
        random_state=SEED,
    )


def _batches(n_rows: int, batch_size: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    # Equal splits of a shuffle, each at least batch_size rows (the first must hold k).
    count = max(1, n_rows // batch_size)
    yield from np.array_split(rng.permutation(n_rows), count)


def evaluate(
    centers: np.ndarray, data: Mapping[str, Rows], names: tuple[str, ...]
) -> dict[str, float]:
    """``{"<channel>-<metric>": value}`` for each channel and each of msd / ssd."""
    scores = {}
    for channel, rows in data.items():
        total = sum(float(nearest_squared_distances(c, centers).sum()) for c in rows.chunks())
        for name in names:
            value = total / rows.n_rows if name == "msd" else total
            scores[f"{channel}-{name}"] = float(value)
    return scores


def _log_final(scores: Mapping[str, float]) -> None:
    for key, value in scores.items():
        channel, _, metric = key.rpartition("-")
        metrics.info(format_final_score(channel, metric, value))
