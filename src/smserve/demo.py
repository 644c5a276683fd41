"""Demo models for ``smserve serve --demo``: trained on first start from data that ships with
scikit-learn (no downloads), cached, and reused on later starts.

* ``xgboost``: binary:logistic on the breast-cancer set (30 features, 20 trees).
* ``kmeans``: k=3 on the iris set (4 features), written as the built-in's ``model_algo-1``.

A model is cached under ``<cache>/demo-<kind>/`` (cache: SMSERVE_CACHE_DIR or
~/.cache/smserve). It is written to a temporary directory that is renamed into place, so a
directory that exists is complete. Training is single-threaded, and the CLI still runs
``prepare`` in a child process: a process that has run OpenMP code cannot fork safely (see
smserve.http.process)."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer, load_iris
from threadpoolctl import threadpool_limits

from smserve.algorithms.ndarray import write_ndarray_file
from smserve.config import Settings

logger = logging.getLogger(__name__)


def model_dir(kind: str, settings: Settings) -> Path:
    """Where the ``kind`` demo model is cached."""
    cache = settings.cache_dir or Path.home() / ".cache" / "smserve"
    return cache / f"demo-{kind}"


def prepare(kind: str, settings: Settings) -> None:
    """Train and cache the ``kind`` demo model unless it is cached; log how to call it."""
    target = model_dir(kind, settings)
    if target.is_dir():
        logger.info("demo %s model: %s (cached)", kind, target)
    else:
        _build(kind, target)
        logger.info("demo %s model trained into %s", kind, target)
    logger.info("try: %s", sample_request(kind, settings.port))


def sample_request(kind: str, port: int) -> str:
    """A curl command that sends the demo's first row as CSV."""
    row = ",".join(f"{value:g}" for value in _SAMPLES[kind]()[0])
    return (
        f"curl -s -X POST http://localhost:{port}/invocations "
        f"-H 'Content-Type: text/csv' -H 'Accept: application/json' --data '{row}'"
    )


def _build(kind: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _TRAINERS[kind](staging)
        staging.rename(target)
    except OSError:
        # Another start renamed its copy into place first; theirs is as good as ours.
        if not target.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _train_xgboost(directory: Path) -> None:
    import xgboost as xgb

    data = load_breast_cancer()
    # One thread: the data is tiny, and it leaves no OpenMP pool behind (see the module doc).
    params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "seed": 0, "nthread": 1}
    dtrain = xgb.DMatrix(data.data.astype(np.float32), label=data.target)
    booster = xgb.train(params, dtrain, num_boost_round=20)
    # The built-in's file name; JSON, the format every XGBoost since 1.0 reads.
    (directory / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))


def _train_kmeans(directory: Path) -> None:
    data = load_iris().data.astype(np.float32)
    with threadpool_limits(limits=1):
        model = KMeans(n_clusters=3, n_init=10, random_state=0).fit(data)
    write_ndarray_file(directory / "model_algo-1", model.cluster_centers_.astype(np.float32))


def _breast_cancer_rows() -> np.ndarray:
    rows: np.ndarray = load_breast_cancer().data
    return rows


def _iris_rows() -> np.ndarray:
    rows: np.ndarray = load_iris().data
    return rows


_TRAINERS: Mapping[str, Callable[[Path], None]] = {
    "xgboost": _train_xgboost,
    "kmeans": _train_kmeans,
}
_SAMPLES: Mapping[str, Callable[[], np.ndarray]] = {
    "xgboost": _breast_cancer_rows,
    "kmeans": _iris_rows,
}
