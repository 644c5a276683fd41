"""A failure on one host ends every host, each with a failure file naming itself and the cause."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from .hosts import COLLECTIVE_TIMEOUT_S, Job, csv_text, host_names

pytestmark = pytest.mark.process

XGBOOST = {"objective": "binary:logistic", "num_round": "5", "max_depth": "2"}


def with_rows(job: Job, rows: tuple[np.ndarray, np.ndarray], names: list[str]) -> Job:
    features, labels = rows
    for i, name in enumerate(names):
        part = slice(i * 100, (i + 1) * 100)
        job.data(name, "train", {"a.csv": csv_text(features[part], labels[part])}, "text/csv")
    return job


def test_bad_data_on_one_host_stops_every_host_naming_that_host(
    tmp_path: Path, binary_rows: tuple[np.ndarray, np.ndarray]
) -> None:
    master, worker = host_names(2)
    job = with_rows(Job(tmp_path, [master, worker], XGBOOST), binary_rows, [master])
    job.data(worker, "train", {"a.csv": "1,2,x\n"}, "text/csv")
    job.start()
    assert job.wait() == {master: 1, worker: 1}
    assert job.hosts[worker].failure.startswith(f"host {worker}: ")
    assert "is not numeric CSV" in job.hosts[worker].failure
    assert job.hosts[master].failure.startswith(
        f"host {master}: stopped because host {worker} failed: "
    )
    assert "is not numeric CSV" in job.hosts[master].failure
    assert not any(h.model_files() for h in job.hosts.values())
    job.assert_loopback_only()


def test_a_host_without_training_data_leaves_and_the_others_train(
    tmp_path: Path, binary_rows: tuple[np.ndarray, np.ndarray]
) -> None:
    empty, *others = host_names(3)  # the master itself holds no data
    job = with_rows(Job(tmp_path, [empty, *others], XGBOOST), binary_rows, others)
    job.data(empty, "train", {"empty.csv": ""}, "text/csv")
    job.start()
    assert job.wait() == {empty: 0, others[0]: 0, others[1]: 0}
    assert f"no training data on host {empty}: leaving the job" in job.hosts[empty].output
    # the first host with data runs the training group's tracker and writes the model
    assert [h.model_files() for h in job.hosts.values()] == [[], ["xgboost-model"], []]
    assert not any(h.failure_file.exists() for h in job.hosts.values())
    job.assert_loopback_only()


def test_a_host_that_never_joins_ends_the_others_within_the_timeout(
    tmp_path: Path, binary_rows: tuple[np.ndarray, np.ndarray]
) -> None:
    master, absent = host_names(2)
    job = with_rows(Job(tmp_path, [master, absent], XGBOOST), binary_rows, [master, absent])
    started = time.monotonic()
    job.start([master])
    assert job.wait() == {master: 1}
    # import and data reading, then at most the collective timeout, then the failure
    assert time.monotonic() - started < COLLECTIVE_TIMEOUT_S + 45
    failure = job.hosts[master].failure
    assert failure.startswith(f"host {master}: training across hosts stopped: ")
    assert "another host stopped" in failure
    job.assert_loopback_only()


@pytest.mark.parametrize("victim", [0, 1], ids=["master-killed", "worker-killed"])
def test_a_host_killed_mid_training_ends_the_other(tmp_path: Path, victim: int) -> None:
    rng = np.random.default_rng(5)
    features = rng.normal(size=(20000, 4)).astype(np.float32)
    labels = (features[:, 0] + rng.normal(0, 1, 20000) > 0).astype(np.float32)
    names = host_names(2)
    hyperparameters = {**XGBOOST, "num_round": "5000", "max_depth": "6"}
    job = Job(tmp_path, names, hyperparameters)
    for i, name in enumerate(names):
        part = slice(i * 10000, (i + 1) * 10000)
        job.data(name, "train", {"a.csv": csv_text(features[part], labels[part])}, "text/csv")
    job.start()
    killed, survivor = names[victim], names[1 - victim]
    job.wait_for_line(killed, "[5]#011")
    job.kill(killed)
    stopped = time.monotonic()
    statuses = job.wait()
    # Broken sockets usually end the survivor at once (1-5 s here, under load too); once in
    # three CI-like runs of the whole suite it took the collective timeout (30.3 s), cause not
    # found. The bound the docs promise is the collective timeout.
    assert time.monotonic() - stopped < COLLECTIVE_TIMEOUT_S + 15
    assert statuses[killed] == -9
    assert statuses[survivor] == 1, job.hosts[survivor].output[-3000:]
    assert job.hosts[survivor].failure.startswith(
        f"host {survivor}: training across hosts stopped: "
    )
    # the killed host leaves its provisional reason, which names it
    assert job.hosts[killed].failure.startswith(f"host {killed}: the job stopped while training")
    assert not any(h.model_files() for h in job.hosts.values())
    job.assert_loopback_only()
