"""k-means trained across real ``smserve train`` processes on loopback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms.ndarray import read_ndarray_file
from smserve.training.kmeans_distances import nearest_squared_distances

from .hosts import IMPORTS_LISTED, Job, csv_text, host_names, imported

pytestmark = pytest.mark.process

KMEANS = {"algorithm": "kmeans", "k": "4", "feature_dim": "3", "mini_batch_size": "100"}


def objective(centres: np.ndarray, rows: np.ndarray) -> float:
    return float(nearest_squared_distances(rows, centres).sum())


def centres_of(job: Job, host: str) -> np.ndarray:
    return read_ndarray_file(job.hosts[host].model_dir / "model_algo-1")


def test_two_sharded_hosts_reach_the_one_host_objective_within_one_percent(
    tmp_path: Path, cluster_rows: np.ndarray
) -> None:
    names = host_names(2)
    job = Job(tmp_path / "two", names, {**KMEANS, "epochs": "3"})
    for i, name in enumerate(names):
        part = cluster_rows[i * 450 : (i + 1) * 450]
        job.data(name, "train", {"a.csv": csv_text(part, None)}, "text/csv;label_size=0")
    alone = Job(tmp_path / "one", names[:1], {**KMEANS, "epochs": "3"})
    alone.data(names[0], "train", {"a.csv": csv_text(cluster_rows, None)}, "text/csv;label_size=0")
    job.start(**IMPORTS_LISTED)
    assert job.wait() == {name: 0 for name in names}, [h.output for h in job.hosts.values()]
    alone.start(**IMPORTS_LISTED)
    assert alone.wait() == {names[0]: 0}
    assert job.hosts[names[1]].model_files() == []
    # k-means is numpy's alone, XGBoost's collective imported without its sklearn wrappers
    hosts = [*job.hosts.values(), *alone.hosts.values()]
    assert imported(alone.hosts[names[0]].output, "smserve.training.kmeans_fit")
    assert not any(imported(host.output, "sklearn.base") for host in hosts)
    two, one = (
        objective(centres_of(job, names[0]), cluster_rows),
        objective(centres_of(alone, names[0]), cluster_rows),
    )
    assert abs(two - one) <= 0.01 * one, (two, one)
    job.assert_loopback_only()


def test_full_batches_across_three_hosts_equal_one_host_over_the_union(
    tmp_path: Path, cluster_rows: np.ndarray
) -> None:
    """The same code on one host and on three: with every step a full pass over the rows, the
    three-host job's centres are the one-host job's, up to the order of the sums."""
    hyperparameters = {
        **KMEANS,
        "mini_batch_size": "5000",
        "epochs": "4",
        "init_method": "kmeans++",
    }
    job = Job(tmp_path / "three", host_names(3), hyperparameters, distribution="FullyReplicated")
    for name in job.names:
        job.data(name, "train", {"a.csv": csv_text(cluster_rows, None)}, "text/csv;label_size=0")
    alone = Job(tmp_path / "one", job.names[:1], hyperparameters)
    alone.data(
        job.names[0], "train", {"a.csv": csv_text(cluster_rows, None)}, "text/csv;label_size=0"
    )
    job.start()
    assert job.wait() == {name: 0 for name in job.names}, [h.output for h in job.hosts.values()]
    alone.start()
    assert alone.wait() == {job.names[0]: 0}
    np.testing.assert_allclose(
        centres_of(job, job.names[0]), centres_of(alone, job.names[0]), rtol=1e-5, atol=1e-5
    )
    job.assert_loopback_only()
