"""k-means training, the built-in algorithm's scheme: mini-batch k-means over the train channel
with more centres than k, reduced to k by a local Lloyd's step; the centroids go to
``model_algo-1`` (float32, k x feature_dim) in the MXNet NDArray format the built-in writes.

One implementation, :mod:`smserve.training.kmeans_fit`, trains on one host and on many (its
sums taken over the hosts). The first mini-batch step starts from K = k *
``extra_center_factor`` centres picked with ``init_method``; each epoch's mini-batches of
``mini_batch_size`` rows (at least K) move each centre to the running mean of the rows given
to it. The K centres are then weighted by the training rows nearest to each and reduced to k
(see :mod:`smserve.training.kmeans_reduce` for that step and the ``auto`` defaults). After each
epoch the mean or sum of squared distances to the nearest of the k reduced centres is logged
per channel (``[epoch]#011train-msd:...``), and the final scores once more in the
``#train_score (algo-1) : ('msd', ...)`` form. ``half_life_time_size`` is validated but has no
effect. Labels are ignored.

Memory: CSV, libsvm and RecordIO channels are read whole. A Parquet channel is read into memory
when its rows, as float32, take at most ``IN_MEMORY_SHARE`` of the container's memory, and
otherwise streamed one row group at a time through every pass (``kmeans_rows``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smserve import media
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.resources import detect
from smserve.scipy_sparse import sparse as sp
from smserve.training.channels import TRAIN, Channel
from smserve.training.collective import Group
from smserve.training.data import Dataset, read_channel
from smserve.training.failure import TrainingError
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.kmeans_config import KMeansConfig
from smserve.training.kmeans_fit import fit
from smserve.training.kmeans_rows import Rows
from smserve.training.parquet import with_label_column
from smserve.training.plan import WHOLE, Share, has_data
from smserve.types import Features

logger = logging.getLogger(__name__)

MODEL_FILE = "model_algo-1"
IN_MEMORY_SHARE = 0.25
FLOAT32_BYTES = 4


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
            config,
            {name: _held(r.part(share.rows(name, r.n_rows)), config) for name, r in rows.items()},
        )


@dataclass(frozen=True)
class KMeansJob:
    """k-means with this host's rows, on its own or in a group of hosts."""

    config: KMeansConfig
    data: Mapping[str, Rows]

    @property
    def train_rows(self) -> int:
        return self.data[TRAIN].n_rows

    def run(self, group: Group, model_dir: Path | None) -> None:
        centers = fit(self.config, self.data, group)
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


def _held(rows: Rows, config: KMeansConfig) -> Rows:
    """``rows`` in memory where they fit ``IN_MEMORY_SHARE`` of the memory; else as they are."""
    size = rows.n_rows * config.feature_dim * FLOAT32_BYTES
    if rows.from_files and size <= detect().memory_bytes * IN_MEMORY_SHARE:
        return rows.loaded()
    return rows


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
