"""k-means training: scikit-learn's MiniBatchKMeans over the train channel; the centroids go
to ``model_algo-1`` (float32, k x feature_dim) in the MXNet NDArray format the built-in
k-means writes.

Each epoch shuffles the rows (fixed seed) and feeds them to ``partial_fit`` in mini-batches of
``mini_batch_size`` rows (at least k); the first batch initialises the centres with
``init_method``. After each epoch the mean or sum of squared distances to the nearest centre is
logged per channel (``[epoch]#011train-msd:...``), and the final scores once more in the
``#train_score (algo-1) : ('msd', ...)`` form. Labels in the data are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from sklearn.cluster import MiniBatchKMeans

from smserve import media
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.training.channels import TRAIN, Channel
from smserve.training.data import Dataset, read_channel
from smserve.training.failure import TrainingError
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.logs import format_final_score, format_scores, metrics
from smserve.types import Features, FloatArray

logger = logging.getLogger(__name__)

MODEL_FILE = "model_algo-1"
SEED = 0
INIT_METHODS = {"random": "random", "kmeans++": "k-means++"}
EVAL_METRICS = ("msd", "ssd")
IGNORED = (
    "extra_center_factor",
    "half_life_time_size",
    "local_lloyd_init_method",
    "local_lloyd_max_iter",
    "local_lloyd_num_trials",
    "local_lloyd_tol",
)
DISTANCE_CHUNK_ROWS = 65536


@dataclass(frozen=True)
class KMeansConfig:
    """The k-means hyperparameters (defaults follow the built-in algorithm)."""

    k: int
    feature_dim: int
    init_method: str = "random"
    epochs: int = 1
    mini_batch_size: int = 5000
    eval_metrics: tuple[str, ...] = ("msd",)

    @classmethod
    def from_hyperparameters(cls, hp: Hyperparameters) -> KMeansConfig:
        config = cls(
            k=hp.required_integer("k", minimum=1),
            feature_dim=hp.required_integer("feature_dim", minimum=1),
            init_method=hp.optional_choice("init_method", INIT_METHODS) or cls.init_method,
            epochs=hp.integer("epochs", cls.epochs, minimum=1),
            mini_batch_size=hp.integer("mini_batch_size", cls.mini_batch_size, minimum=1),
            eval_metrics=_eval_metrics(hp),
        )
        hp.ignore(IGNORED)
        return config


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

    def train(self, hp: Hyperparameters, channels: Mapping[str, Channel], model_dir: Path) -> None:
        config = KMeansConfig.from_hyperparameters(hp)
        hp.check_all_used(self.name)
        data = {name: _checked(read_channel(ch), config) for name, ch in channels.items()}
        centers = fit(config, data)
        model_dir.mkdir(parents=True, exist_ok=True)
        write_ndarray_file(model_dir / MODEL_FILE, centers)
        logger.info("wrote %d centroids of %d features to %s", *centers.shape, model_dir)


def _checked(dataset: Dataset, config: KMeansConfig) -> Dataset:
    if dataset.n_features != config.feature_dim and not sp.issparse(dataset.features):
        raise TrainingError(
            f"channel {dataset.name!r} has {dataset.n_features} features but "
            f"feature_dim={config.feature_dim}"
        )
    values = dataset.features.data if sp.issparse(dataset.features) else dataset.features
    if not np.isfinite(values).all():
        raise TrainingError(f"channel {dataset.name!r} has missing or infinite feature values")
    return dataset.with_width(config.feature_dim)


def fit(config: KMeansConfig, data: Mapping[str, Dataset]) -> FloatArray:
    """The centroids, float32 of shape (k, feature_dim), fitted on ``data["train"]``."""
    train = data[TRAIN]
    if train.n_rows < config.k:
        raise TrainingError(f"k={config.k} is more than the {train.n_rows} training rows")
    model = _model(config)
    rng = np.random.default_rng(SEED)
    scores: dict[str, float] = {}
    for epoch in range(config.epochs):
        for rows in _batches(train.n_rows, max(config.mini_batch_size, config.k), rng):
            model.partial_fit(train.features[rows])
        scores = evaluate(model.cluster_centers_, data, config.eval_metrics)
        metrics.info(format_scores(epoch, scores))
    _log_final(scores)
    return np.ascontiguousarray(model.cluster_centers_, dtype=np.float32)


def _model(config: KMeansConfig) -> MiniBatchKMeans:
    return MiniBatchKMeans(
        n_clusters=config.k,
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
    centers: np.ndarray, data: Mapping[str, Dataset], names: tuple[str, ...]
) -> dict[str, float]:
    """``{"<channel>-<metric>": value}`` for each channel and each of msd / ssd."""
    scores = {}
    for channel, dataset in data.items():
        distances = nearest_squared_distances(dataset.features, centers)
        for name in names:
            value = distances.mean() if name == "msd" else distances.sum()
            scores[f"{channel}-{name}"] = float(value)
    return scores


def nearest_squared_distances(features: Features, centers: np.ndarray) -> npt.NDArray[np.float64]:
    """Squared Euclidean distance of each row to its nearest centre, float64 of shape (n,)."""
    c = np.asarray(centers, dtype=np.float64)
    c_squared = np.einsum("ij,ij->i", c, c)
    parts = [
        _chunk_distances(features[start : start + DISTANCE_CHUNK_ROWS], c, c_squared)
        for start in range(0, features.shape[0], DISTANCE_CHUNK_ROWS)
    ]
    return np.concatenate(parts)


def _chunk_distances(
    x: Features, c: npt.NDArray[np.float64], c_squared: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    x_squared, cross = _sparse_products(x, c) if sp.issparse(x) else _dense_products(x, c)
    squared = x_squared[:, None] - 2.0 * cross + c_squared[None, :]
    # clip: the expansion can go slightly negative through rounding
    nearest: npt.NDArray[np.float64] = np.maximum(squared.min(axis=1), 0.0)
    return nearest


Products = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


def _dense_products(x: FloatArray, c: npt.NDArray[np.float64]) -> Products:
    x64 = np.asarray(x, dtype=np.float64)
    return np.einsum("ij,ij->i", x64, x64), x64 @ c.T


def _sparse_products(x: sp.csr_matrix, c: npt.NDArray[np.float64]) -> Products:
    x64 = x.astype(np.float64)
    return np.asarray(x64.multiply(x64).sum(axis=1)).ravel(), np.asarray(x64 @ c.T)


def _log_final(scores: Mapping[str, float]) -> None:
    for key, value in scores.items():
        channel, _, metric = key.rpartition("-")
        metrics.info(format_final_score(channel, metric, value))
