"""The Spark engine from the command line (its own ``local[1]`` session, started and stopped
by the command), and the shared cluster's sockets: every one on loopback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.process.servers import SMSERVE
from tests.scoring.conftest import outputs
from tests.spark.conftest import PYSPARK_PANDAS_WARNING, write_csv

pytestmark = pytest.mark.filterwarnings(PYSPARK_PANDAS_WARNING)
LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1"}


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``smserve`` in ``cwd``, without the serving, Spark or PySpark variables of the tests'
    environment: the command must set what its local session needs itself."""
    prefixes = ("SAGEMAKER_", "SMSERVE_", "SM_", "OMP_", "SPARK_", "PYSPARK_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return subprocess.run([str(SMSERVE), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip


def test_the_command_scores_relative_paths_as_the_local_engine_does(
    xgboost_dir: Path, tmp_path: Path
) -> None:
    write_csv(tmp_path / "in", missing=True)
    (tmp_path / "model").symlink_to(xgboost_dir)
    base = ["score", "in", "--model-dir", "model", "--content-type", "text/csv",
            "--accept", "application/jsonlines", "--max-payload-mb", "0.0005"]  # fmt: skip
    local = _run([*base, "--output", "local"], tmp_path)
    assert local.returncode == 0, local.stderr
    spark = _run([*base, "--output", "spark", "--engine", "spark", "--address", "local[1]"],
                 tmp_path)  # fmt: skip
    assert spark.returncode == 0, spark.stderr[-3000:]
    assert "Spark session (local[1]) ready in" in spark.stderr
    assert "Spark session stopped in" in spark.stderr
    assert "3 files scored, 0 failed" in spark.stderr
    assert outputs(tmp_path / "spark") == outputs(tmp_path / "local")


def test_every_socket_the_cluster_listens_on_is_loopback(spark: Any) -> None:
    from pyspark import SparkContext

    assert spark.range(4, numPartitions=2).count() == 4  # executors and Python workers up
    gateway = psutil.Process(SparkContext._gateway.proc.pid)  # the driver's JVM
    # Exited launchers (spark-class's shell) stay zombies under the JVM, which never reaps them.
    children = [p for p in gateway.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]
    processes = [psutil.Process(), gateway, *children]
    executors = [p for p in processes if "CoarseGrainedExecutorBackend" in " ".join(p.cmdline())]
    assert len(executors) == 2
    listening = [
        (process.pid, connection.laddr)
        for process in processes
        for connection in process.net_connections(kind="inet")
        if connection.status == psutil.CONN_LISTEN
    ]
    owners = {pid for pid, _ in listening}
    assert {gateway.pid, *(e.pid for e in executors)} <= owners  # driver, block managers
    assert [(pid, address) for pid, address in listening if address.ip not in LOOPBACK] == []
