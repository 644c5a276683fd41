"""Loading a model directory with the algorithm the settings name or its files show.

``load_algorithm`` takes the algorithm from ``settings.algorithm`` or, when unset, from the
model files, each algorithm of the table (``smserve.algorithms.catalog``) in turn claiming them
by what they hold: a ``model_algo-1`` holding one array, a ``*.npy`` or a ``*.skops`` file means
k-means; any other model file but a foreign one (an NDArray file of several arrays such as
PCA's, a zip) means XGBoost; files no algorithm claims are refused, saying what they look like.
A directory holding only a ``model.tar.gz`` is judged by the archive's contents.
"""

from __future__ import annotations

from pathlib import Path

from smserve.algorithms.base import Algorithm
from smserve.algorithms.catalog import chosen, detected, expected_files
from smserve.algorithms.heads import described
from smserve.algorithms.model_files import candidate_files, opened_model_dir
from smserve.config import Settings
from smserve.errors import ModelLoadError

__all__ = ["Algorithm", "detect_algorithm", "load_algorithm"]


def load_algorithm(settings: Settings, model_dir: Path | None = None) -> Algorithm:
    """Load the model in ``model_dir`` (``settings.model_dir`` when None).

    Raises ModelLoadError naming the file and the reason when nothing loadable is there.
    """
    directory = settings.model_dir if model_dir is None else model_dir
    with opened_model_dir(directory, settings.max_model_unpacked_bytes) as files_dir:
        if settings.algorithm is None:
            _check_not_empty(files_dir)
        spec = chosen(settings.algorithm, described(candidate_files(files_dir)))
        return spec.load(settings, files_dir)


def detect_algorithm(model_dir: Path) -> str:
    """The name of the algorithm whose model files are in ``model_dir`` (see the module doc)."""
    _check_not_empty(model_dir)
    return detected(described(candidate_files(model_dir))).name


def _check_not_empty(model_dir: Path) -> None:
    if not candidate_files(model_dir):
        raise ModelLoadError(
            f"no model files in {model_dir}: expected {expected_files()}, "
            "or a model.tar.gz holding one"
        )
