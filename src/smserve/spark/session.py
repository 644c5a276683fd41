"""The Spark session ``smserve score --engine spark`` runs on: the caller's active session when
there is one (it is left running), else one started here and stopped when the job is done.

A local master (``local[N]``, ``local-cluster[...]``) gets a session on loopback only: the
driver, its block manager and (through ``SPARK_LOCAL_IP``, which the JVMs read) the
local-cluster's master, workers and executors bind and advertise 127.0.0.1, the web UI is
off, and the Python workers run this interpreter (``PYSPARK_PYTHON``; pyspark otherwise
runs whatever ``python3`` is first on PATH, which need not have smserve). Values the user
set in the environment are kept. A cluster master (``spark://``, ``yarn``, ``k8s://``) gets
only what every job needs; its addresses and UI are the cluster's own configuration."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
LOCAL_CONF = {
    "spark.driver.host": LOOPBACK,
    "spark.driver.bindAddress": LOOPBACK,
    "spark.ui.enabled": "false",
}
# The command logs its own progress; Spark's console bar would write over it.
JOB_CONF = {"spark.ui.showConsoleProgress": "false", "spark.app.name": "smserve score"}


def is_local(master: str) -> bool:
    return master.startswith("local")


def local_environment(environ: MutableMapping[str, str]) -> None:
    """What a local master's JVMs and Python workers read from the environment, where the
    user has not set it (``environ`` is the process environment, which they inherit)."""
    environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    environ.setdefault("PYSPARK_PYTHON", sys.executable)


def conf_for(master: str) -> dict[str, str]:
    """The settings a session started here for ``master`` gets."""
    return {"spark.master": master, **JOB_CONF, **(LOCAL_CONF if is_local(master) else {})}


def open_session(
    master: str | None, workers: int, environ: MutableMapping[str, str]
) -> tuple[SparkSession, bool]:
    """The active session (and False), or one started for ``master`` (default
    ``local[workers]``) and True: the caller stops what it started."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    master = master or f"local[{workers}]"
    if is_local(master):
        local_environment(environ)
    began = time.monotonic()
    builder = SparkSession.builder
    for key, value in conf_for(master).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")  # the command reports failures itself
    logger.info("Spark session (%s) ready in %.2f s", master, time.monotonic() - began)
    return session, True


def close_session(session: SparkSession) -> None:
    began = time.monotonic()
    session.stop()
    logger.info("Spark session stopped in %.2f s", time.monotonic() - began)
