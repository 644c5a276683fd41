from __future__ import annotations

import logging
import re

import numpy as np
import pytest

from smserve.algorithms.ndarray import read_ndarray_file
from smserve.training.collective import LOCAL
from smserve.training.data import Dataset
from smserve.training.kmeans_config import KMeansConfig
from smserve.training.kmeans_distances import nearest_squared_distances
from smserve.training.kmeans_fit import fit
from smserve.training.kmeans_rows import Rows

from .training_data import TrainingJob, blobs, to_csv, to_libsvm, to_recordio


def test_trains_on_recordio_by_default_and_writes_model_algo_1(
    job: TrainingJob, capsys: pytest.CaptureFixture[str]
) -> None:
    features, labels = blobs(90, 4)
    job.hyperparameters(algorithm="kmeans", k="3", feature_dim="4", epochs="2")
    job.channel("train", {"part-0": to_recordio(features, labels)})
    assert job.run() == 0
    centers = read_ndarray_file(job.model_dir / "model_algo-1")
    assert centers.shape == (3, 4)
    assert centers.dtype == np.float32
    found = sorted(np.round(centers[:, 0] / 10).astype(int).tolist())
    assert found == [-1, 0, 1]  # one centre per blob
    assert not job.failure_file.exists()
    out = capsys.readouterr().out
    assert re.search(r"^\[1\]#011train-msd:\d+\.\d{5}$", out, re.MULTILINE)
    assert re.search(r"^#train_score \(algo-1\) : \('msd', [0-9.e-]+\)$", out, re.MULTILINE)


def test_csv_with_validation_logs_both_channels_and_both_metrics(
    job: TrainingJob, capsys: pytest.CaptureFixture[str]
) -> None:
    features, labels = blobs(60, 2)
    job.hyperparameters(
        k="3", feature_dim="2", init_method="kmeans++", eval_metrics='["msd", "ssd"]',
        mini_batch_size="20", extra_center_factor="auto", local_lloyd_max_iter="300",
        local_lloyd_num_trials="auto", half_life_time_size="100",
    )  # fmt: skip
    job.channel("train", {"a.csv": to_csv(features[:40], labels[:40])}, "text/csv")
    job.channel("validation", {"a.csv": to_csv(features[40:], labels[40:])}, "text/csv")
    assert job.run(SMSERVE_ALGORITHM="kmeans") == 0
    out = capsys.readouterr().out
    line = r"^\[0\]#011train-msd:[\d.]+#011train-ssd:[\d.]+#011validation-msd:[\d.]+"
    assert re.search(line + r"#011validation-ssd:[\d.]+$", out, re.MULTILINE)
    assert "#validation_score (algo-1) : ('ssd'," in out
    assert "half_life_time_size is accepted but has no effect" in out


def test_sparse_libsvm_narrower_than_feature_dim_is_widened(job: TrainingJob) -> None:
    features, labels = blobs(30, 3)
    features[:, 2] = 0.0  # the last column never appears in the libsvm text
    job.hyperparameters(algorithm="kmeans", k="3", feature_dim="3")
    job.channel("train", {"a": to_libsvm(features, labels)}, "text/libsvm")
    assert job.run() == 0
    assert read_ndarray_file(job.model_dir / "model_algo-1").shape == (3, 3)


def in_memory(features: np.ndarray) -> dict[str, Rows]:
    return {"train": Rows.in_memory(Dataset("train", features, None))}


def test_fit_is_deterministic_and_reaches_the_blob_centres() -> None:
    features, _ = blobs(120, 3)
    data = in_memory(features)
    config = KMeansConfig(k=3, feature_dim=3, epochs=3, mini_batch_size=30)
    first, second = fit(config, data, LOCAL), fit(config, data, LOCAL)
    np.testing.assert_array_equal(first, second)
    assert nearest_squared_distances(features, first).mean() < 1.5  # noise variance 3 * 0.25


# Data sets on which k centres trained directly (random init, one epoch: the defaults, and what
# extra_center_factor=1 still does) merge two blobs; over-sampling and the reduction must not.
@pytest.mark.parametrize(("n_rows", "n_features", "seed"), [(90, 3, 0), (60, 4, 1), (150, 2, 2)])
def test_builtin_defaults_put_one_centre_on_each_blob(
    n_rows: int, n_features: int, seed: int
) -> None:
    features, _ = blobs(n_rows, n_features, seed)
    centers = fit(KMeansConfig(k=3, feature_dim=n_features), in_memory(features), LOCAL)
    truth = np.array([[0.0], [10.0], [-10.0]]) * np.ones(n_features)
    distances = np.sqrt(((centers[:, None, :] - truth[None]) ** 2).sum(-1))
    assert sorted(distances.argmin(axis=1).tolist()) == [0, 1, 2]  # each blob has a centre
    assert distances.min(axis=1).max() < 0.5  # and it lies near the blob's true centre


def test_defaults_log_the_over_sampling_and_factor_1_trains_k_centres_directly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    features, _ = blobs(90, 2)
    data = in_memory(features)
    with caplog.at_level(logging.INFO, logger="smserve.training.kmeans_fit"):
        fit(KMeansConfig(k=3, feature_dim=2), data, LOCAL)
        assert "mini-batch k-means with 30 centres for k=3, 90 rows" in caplog.text
        assert "init kmeans++, 1 trial(s), max_iter 300, tol 0.0001" in caplog.text
        caplog.clear()
        fit(KMeansConfig(k=3, feature_dim=2, extra_center_factor=1), data, LOCAL)
        assert "mini-batch k-means with 3 centres for k=3" in caplog.text
        assert "reducing" not in caplog.text


def test_local_lloyd_hyperparameters_are_used(
    job: TrainingJob, capsys: pytest.CaptureFixture[str]
) -> None:
    features, labels = blobs(90, 2)
    job.hyperparameters(
        algorithm="kmeans", k="3", feature_dim="2", extra_center_factor="4",
        local_lloyd_init_method="random", local_lloyd_num_trials="3",
        local_lloyd_max_iter="50", local_lloyd_tol="0.001",
    )  # fmt: skip
    job.channel("train", {"a.csv": to_csv(features, labels)}, "text/csv")
    assert job.run() == 0
    out = capsys.readouterr().out
    assert "mini-batch k-means with 12 centres for k=3" in out
    assert "init random, 3 trial(s), max_iter 50, tol 0.001" in out
    centers = read_ndarray_file(job.model_dir / "model_algo-1")
    assert sorted(np.round(centers[:, 0] / 10).astype(int).tolist()) == [-1, 0, 1]


@pytest.mark.parametrize(
    ("hyperparameters", "message"),
    [
        ({"feature_dim": "2"}, "hyperparameter k is required"),
        ({"k": "3"}, "hyperparameter feature_dim is required"),
        ({"k": "3", "feature_dim": "5"}, "has 2 features but feature_dim=5"),
        ({"k": "99", "feature_dim": "2"}, "k=99 is more than the 30 training rows"),
        ({"k": "3", "feature_dim": "2", "init_method": "magic"}, "init_method='magic'"),
        ({"k": "3", "feature_dim": "2", "eval_metrics": "rmse"}, "unknown metric.*rmse"),
        ({"k": "3", "feature_dim": "2", "epochs": "0"}, "epochs=0 must be at least 1"),
        ({"k": "3", "feature_dim": "2", "num_round": "3"}, "unknown hyperparameter.*num_round"),
    ],
    ids=["no-k", "no-dim", "dim-mismatch", "k-too-big", "init", "metric", "epochs", "unknown"],
)
def test_bad_jobs_fail_with_a_reason(
    job: TrainingJob, hyperparameters: dict[str, str], message: str
) -> None:
    features, labels = blobs(30, 2)
    job.hyperparameters(algorithm="kmeans", **hyperparameters)
    job.channel("train", {"a.csv": to_csv(features, labels)}, "text/csv")
    assert job.run() == 1
    assert re.search(message, job.failure)
    assert not (job.model_dir / "model_algo-1").exists()


@pytest.mark.parametrize(
    ("hyperparameters", "message"),
    [
        ({"extra_center_factor": "0"}, "extra_center_factor='0' must be a positive integer or"),
        ({"extra_center_factor": "many"}, "extra_center_factor='many' must be a positive integer"),
        ({"local_lloyd_init_method": "magic"}, "local_lloyd_init_method='magic' must be one of"),
        ({"local_lloyd_max_iter": "0"}, "local_lloyd_max_iter=0 must be at least 1"),
        ({"local_lloyd_max_iter": "auto"}, "local_lloyd_max_iter='auto' is not an integer"),
        ({"local_lloyd_num_trials": "0"}, "local_lloyd_num_trials='0' must be a positive integer"),
        ({"local_lloyd_num_trials": "1.5"}, "local_lloyd_num_trials='1.5' must be a positive"),
        ({"local_lloyd_tol": "2"}, "local_lloyd_tol=2.0 must be at most 1.0"),
        ({"local_lloyd_tol": "-0.1"}, "local_lloyd_tol=-0.1 must be at least 0.0"),
        ({"local_lloyd_tol": "tiny"}, "local_lloyd_tol='tiny' is not a number"),
        ({"half_life_time_size": "-1"}, "half_life_time_size=-1 must be at least 0"),
    ],
    ids=[
        "factor-0", "factor-text", "lloyd-init", "lloyd-iter-0", "lloyd-iter-auto",
        "lloyd-trials-0", "lloyd-trials-fraction", "lloyd-tol-high", "lloyd-tol-negative",
        "lloyd-tol-text", "half-life-negative",
    ],
)  # fmt: skip
def test_bad_over_sampling_values_fail_naming_the_key(
    job: TrainingJob, hyperparameters: dict[str, str], message: str
) -> None:
    features, labels = blobs(30, 2)
    job.hyperparameters(algorithm="kmeans", k="3", feature_dim="2", **hyperparameters)
    job.channel("train", {"a.csv": to_csv(features, labels)}, "text/csv")
    assert job.run() == 1
    assert message in job.failure
    assert not (job.model_dir / "model_algo-1").exists()


def test_missing_feature_values_fail(job: TrainingJob) -> None:
    job.hyperparameters(algorithm="kmeans", k="1", feature_dim="2")
    job.channel("train", {"a.csv": "0,1,\n0,2,3\n"}, "text/csv")
    assert job.run() == 1
    assert "missing or infinite feature values" in job.failure
