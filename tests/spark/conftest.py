"""One real Spark cluster for every Spark test: ``local-cluster[2,1,1024]`` (a master and two
workers in the driver's JVM, each worker starting its own executor JVM), started once per
session (~15 s) and stopped at the end with its JVMs. Everything it binds is on 127.0.0.1:
the driver and its block manager by configuration, the master, workers and executors through
``SPARK_LOCAL_IP``; the web UI is off. ``./run-tests`` installs a Java runtime when there is
none; only where none can be had are these tests skipped.

Models: a multi-class XGBoost (vector outputs, the hardest to name and assemble) and a
k-means, both four features, trained into a temporary folder."""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smserve.algorithms.ndarray import write_ndarray_file
from smserve.config import Settings
from smserve.scoring.engine import Summary, score_files
from smserve.scoring.inputs import discover
from smserve.scoring.options import Plan, Run
from smserve.scoring.progress import Progress
from smserve.spark.session import LOOPBACK, conf_for
from tests.scoring.conftest import csv_body

N_FEATURES = 4
FILE_ROWS = {"a": 40, "nested/b": 25, "c": 1}  # several shards, a folder, a one-row file
MASTER = "local-cluster[2,1,1024]"
# pyspark 4.3 checks the pandas version whenever mapInArrow is called; it warns about pandas
# 3, which the Arrow path does not use.
PYSPARK_PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The session; stopped, with its gateway and executor JVMs, after the last test."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: ./run-tests installs openjdk-17-jre-headless (apt)")
    from pyspark.sql import SparkSession

    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("SPARK_LOCAL_IP", LOOPBACK)  # read by the JVMs at start
        environment.setenv("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder
        for key, value in conf_for(MASTER).items():  # what the command gives a local master
            builder = builder.config(key, value)
        # A failed task is not retried (local[N]'s default): the tests' failures are meant.
        builder = builder.config("spark.task.maxFailures", "1")
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        try:
            yield session
        finally:
            _stop(session)


def _stop(session: Any) -> None:
    """Stops the session (the local cluster kills its executors), then the gateway JVM by
    its own handle, and removes the workers' folder the cluster left under SPARK_HOME."""
    from pyspark import SparkContext

    context = session.sparkContext
    work = Path(context._jvm.System.getenv("SPARK_HOME")) / "work"  # where the workers ran
    application = context.applicationId
    session.stop()
    gateway = SparkContext._gateway
    if gateway is not None:
        gateway.shutdown()
        gateway.proc.stdin.close()  # the JVM exits when its standard input closes
        gateway.proc.wait(timeout=60)
        SparkContext._gateway = SparkContext._jvm = None
    shutil.rmtree(work / application, ignore_errors=True)
    if work.is_dir() and not any(work.iterdir()):
        work.rmdir()


@pytest.fixture(scope="session")
def xgboost_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``xgboost-model``: multi:softprob, 3 classes, 4 unnamed features."""
    import xgboost as xgb

    x = np.random.default_rng(0).normal(size=(90, N_FEATURES)).astype(np.float32)
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(x, label=np.digitize(x[:, 0], [-0.5, 0.5])), 3)
    directory = tmp_path_factory.mktemp("xgboost")
    (directory / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))
    return directory


@pytest.fixture(scope="session")
def kmeans_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``model_algo-1``: 3 centroids of 4 features."""
    directory = tmp_path_factory.mktemp("kmeans")
    centroids = np.random.default_rng(1).normal(size=(3, N_FEATURES)).astype(np.float32)
    write_ndarray_file(directory / "model_algo-1", centroids)
    return directory


def settings_for(model_dir: Path, environ: dict[str, str] | None = None) -> Settings:
    return Settings.from_env(environ or {}).replace(model_dir=model_dir, batch_mode=True)


def quiet() -> Progress:
    return Progress(io.StringIO(), None, is_tty=False, interval_s=3600)


def score_locally(settings: Settings, inputs: Path, out: Path, plan: Plan, run: Run) -> Summary:
    """The local engine's run on the same inputs: what the Spark engine must equal."""
    return score_files(discover([str(inputs)], out), settings, plan, run, quiet())


def rows(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, N_FEATURES)).astype(np.float32)


def write_csv(root: Path, missing: bool = False) -> None:
    """One CSV file per FILE_ROWS entry under ``root``."""
    for seed, (name, n) in enumerate(FILE_ROWS.items()):
        values = rows(n, seed)
        if missing:
            values[::7, 2] = np.nan  # empty cells: missing values (XGBoost takes them)
        path = root / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(csv_body(values))
