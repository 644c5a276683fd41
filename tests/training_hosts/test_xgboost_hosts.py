"""XGBoost trained across 2 and 3 real ``smserve train`` processes on loopback."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb

from .hosts import IMPORTS_LISTED, Job, csv_text, host_names, imported

pytestmark = pytest.mark.process

HYPERPARAMETERS = {
    "objective": "binary:logistic",
    "num_round": "30",
    "max_depth": "3",
    "eval_metric": "logloss",
    "early_stopping_rounds": "3",
    "tree_method": "hist",
}
ROUND = re.compile(r"^\[\d+\]#011.*$", re.MULTILINE)


def sharded(tmp_path: Path, rows: tuple[np.ndarray, np.ndarray], count: int) -> Job:
    features, labels = rows
    job = Job(tmp_path, host_names(count), HYPERPARAMETERS)
    for i, name in enumerate(job.names):
        part = slice(i * 400 // count, (i + 1) * 400 // count)
        valid = slice(400 + i * 200 // count, 400 + (i + 1) * 200 // count)
        job.data(name, "train", {"a.csv": csv_text(features[part], labels[part])}, "text/csv")
        job.data(
            name, "validation", {"v.csv": csv_text(features[valid], labels[valid])}, "text/csv"
        )
    return job


def test_two_hosts_train_one_model_written_by_the_master_on_loopback_only(
    tmp_path: Path, binary_rows: tuple[np.ndarray, np.ndarray]
) -> None:
    job = sharded(tmp_path, binary_rows, 2)
    job.start(**IMPORTS_LISTED)
    assert job.wait() == {name: 0 for name in job.names}, [h.output for h in job.hosts.values()]
    master, worker = job.hosts.values()
    assert imported(master.output, "xgboost.core")
    assert not imported(master.output, "sklearn.base")  # XGBoost imported lean
    assert master.model_files() == ["xgboost-model"]
    assert worker.model_files() == []
    assert not master.failure_file.exists()
    assert not worker.failure_file.exists()
    # the metrics are computed over both hosts' validation rows: the hosts log the same lines
    assert ROUND.findall(master.output) == ROUND.findall(worker.output) != []
    assert "early stopping: best_iteration=" in master.output
    booster = xgb.Booster()
    booster.load_model(bytearray((master.model_dir / "xgboost-model").read_bytes()))
    features, labels = binary_rows
    predicted = booster.predict(xgb.DMatrix(features[400:])) > 0.5
    assert (predicted == labels[400:]).mean() > 0.85
    job.assert_loopback_only()


def test_three_hosts_split_fully_replicated_rows_by_host_index(
    tmp_path: Path, binary_rows: tuple[np.ndarray, np.ndarray]
) -> None:
    features, labels = binary_rows
    job = Job(tmp_path, host_names(3), {**HYPERPARAMETERS, "early_stopping_rounds": ""})
    job.distribution = "FullyReplicated"
    for name in job.names:
        job.data(name, "train", {"a.csv": csv_text(features, labels)}, "text/csv")
    job.start()
    assert job.wait() == {name: 0 for name in job.names}, [h.output for h in job.hosts.values()]
    rows = [re.findall(r"training on (\d+) of (\d+) rows", h.output) for h in job.hosts.values()]
    assert rows == [[("200", "600")], [("200", "600")], [("200", "600")]]
    assert [len(h.model_files()) for h in job.hosts.values()] == [1, 0, 0]
    job.assert_loopback_only()


def test_a_host_without_a_validation_shard_evaluates_zero_rows(
    tmp_path: Path, binary_rows: tuple[np.ndarray, np.ndarray]
) -> None:
    features, labels = binary_rows
    job = Job(tmp_path, host_names(2), HYPERPARAMETERS)
    master, worker = job.names
    for i, name in enumerate(job.names):
        part = slice(i * 200, (i + 1) * 200)
        job.data(name, "train", {"a.csv": csv_text(features[part], labels[part])}, "text/csv")
    valid = {"v.csv": csv_text(features[400:], labels[400:])}
    job.data(master, "validation", valid, "text/csv")
    job.data(worker, "validation", {"empty.csv": ""}, "text/csv")
    job.start()
    assert job.wait() == {master: 0, worker: 0}, [h.output for h in job.hosts.values()]
    rounds = ROUND.findall(job.hosts[master].output)
    assert rounds == ROUND.findall(job.hosts[worker].output)
    assert "validation-logloss" in rounds[0]
    job.assert_loopback_only()
