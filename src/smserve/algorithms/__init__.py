"""Algorithms, one module per model kind, selected through an explicit table.

``load_algorithm`` picks the kind from ``settings.algorithm`` or, when unset, from the model
directory: a ``model_algo-1``, ``*.npy`` or ``*.skops`` file means k-means; any other model file
means XGBoost. A directory holding only a ``model.tar.gz`` is judged by the archive's contents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from smserve.algorithms.base import Algorithm
from smserve.algorithms.centroids import BUILTIN_NAME, is_kmeans_artifact
from smserve.algorithms.model_files import candidate_files, opened_model_dir
from smserve.config import Settings
from smserve.errors import ModelLoadError

__all__ = ["Algorithm", "detect_algorithm", "load_algorithm"]

Loader = Callable[[Settings, Path], Algorithm]


def _load_kmeans(settings: Settings, model_dir: Path) -> Algorithm:
    from smserve.algorithms.kmeans import KMeans

    return KMeans.load(settings, model_dir)


def _load_xgboost(settings: Settings, model_dir: Path) -> Algorithm:
    from smserve.algorithms.xgboost_import import import_lean

    import_lean()
    from smserve.algorithms.xgboost import XGBoost

    return XGBoost.load(settings, model_dir)


# Each loader imports its own module, so a k-means deployment never imports XGBoost.
LOADERS: Mapping[str, Loader] = {"kmeans": _load_kmeans, "xgboost": _load_xgboost}


def load_algorithm(settings: Settings, model_dir: Path | None = None) -> Algorithm:
    """Load the model in ``model_dir`` (``settings.model_dir`` when None).

    Raises ModelLoadError naming the file and the reason when nothing loadable is there.
    """
    directory = settings.model_dir if model_dir is None else model_dir
    with opened_model_dir(directory, settings.max_model_unpacked_bytes) as files_dir:
        name = settings.algorithm or detect_algorithm(files_dir)
        return LOADERS[name](settings, files_dir)


def detect_algorithm(model_dir: Path) -> str:
    """``"kmeans"`` or ``"xgboost"`` from the files in ``model_dir`` (see the module doc)."""
    files = candidate_files(model_dir)
    if not files:
        raise ModelLoadError(
            f"no model files in {model_dir}: expected xgboost-model (XGBoost) or "
            f"{BUILTIN_NAME} (k-means), or a model.tar.gz holding one"
        )
    return "kmeans" if any(is_kmeans_artifact(p) for p in files) else "xgboost"
