"""k-means: ``algorithm`` (the Algorithm), ``centroids`` (reading the built-in's, numpy's
and scikit-learn's artifacts) and ``claims`` (which files are k-means', by what they hold).

This ``__init__`` holds only the table's entry (``KMEANS``, see ``smserve.algorithms.catalog``):
it imports the code only when called, so the table stays cheap to import."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from smserve.algorithms.spec import AlgorithmSpec, DemoSpec, nothing_to_import

if TYPE_CHECKING:
    import numpy as np

    from smserve.algorithms.base import Algorithm
    from smserve.algorithms.footprint import Footprint
    from smserve.algorithms.heads import ModelFile
    from smserve.config import Settings


def _detects(files: Sequence[ModelFile]) -> bool:
    """A built-in ``model_algo-1`` of one array, a ``*.npy`` or a ``*.skops`` (``claims``)."""
    from smserve.algorithms.kmeans.claims import is_kmeans_file

    return any(is_kmeans_file(file) for file in files)


def _load(settings: Settings, model_dir: Path) -> Algorithm:
    from smserve.algorithms.kmeans.algorithm import KMeans

    return KMeans.load(settings, model_dir)


def _footprint(files: list[ModelFile], settings: Settings) -> Footprint:
    from smserve.algorithms.footprint import kmeans_footprint

    return kmeans_footprint(files, settings)


def _train_demo(directory: Path) -> None:
    """k=3 on the iris set (4 features), written as the built-in's ``model_algo-1``."""
    import numpy as np
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    from smserve.algorithms.ndarray import write_ndarray_file

    data = _demo_rows().astype(np.float32)
    with threadpool_limits(limits=1):
        model = KMeans(n_clusters=3, n_init=10, random_state=0).fit(data)
    write_ndarray_file(directory / "model_algo-1", model.cluster_centers_.astype(np.float32))


def _demo_rows() -> np.ndarray:
    from sklearn.datasets import load_iris

    rows: np.ndarray = load_iris().data
    return rows


KMEANS = AlgorithmSpec(
    name="kmeans",
    title="k-means",
    model_file="model_algo-1",
    detects=_detects,
    load=_load,
    import_lean=nothing_to_import,
    fork_unsafe_modules=(),
    trainer="smserve.training.kmeans:KMeansTrainer",
    footprint=_footprint,
    demo=DemoSpec(train=_train_demo, rows=_demo_rows),
)
