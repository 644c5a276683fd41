"""Reading k-means centroids from a model directory: the built-in algorithm's ``model_algo-1``
(MXNet NDArray file), a ``.npy`` array, or a scikit-learn KMeans saved with skops. Never pickle.

The artifact is the one file ``claims`` says is k-means'; other files in the directory are not
read (beyond their first bytes).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import numpy.typing as npt

from smserve.algorithms.confinement import open_file, read_bytes
from smserve.algorithms.heads import described
from smserve.algorithms.kmeans.claims import EXPECTED, NPY_SUFFIX, SKOPS_SUFFIX, is_kmeans_file
from smserve.algorithms.lookalikes import what_they_are
from smserve.algorithms.model_files import candidate_files, check_not_empty
from smserve.algorithms.ndarray import read_ndarray_file
from smserve.errors import ModelLoadError

logger = logging.getLogger(__name__)

Centroids = npt.NDArray[np.float64]


def find_artifact(model_dir: Path) -> Path:
    """The one k-means artifact in ``model_dir``; raises ModelLoadError for none or several."""
    files = candidate_files(model_dir)
    artifacts = [f.path for f in described(files) if f.path and is_kmeans_file(f)]
    if not artifacts:
        found = what_they_are(described(files))
        raise ModelLoadError(f"no k-means model in {model_dir}: expected {EXPECTED}{found}")
    if len(artifacts) > 1:
        names = ", ".join(p.name for p in artifacts)
        raise ModelLoadError(f"{model_dir} holds several k-means models ({names}); keep one")
    ignored = [p.name for p in files if p not in artifacts]
    if ignored:
        logger.info("k-means: serving %s; not reading %s", artifacts[0].name, ", ".join(ignored))
    return artifacts[0]


def load_centroids(path: Path) -> Centroids:
    """Centroids of shape (k, d), float64, C-contiguous, from the artifact at ``path``.

    Raises ModelLoadError naming the file when it cannot be read or its array is not a finite
    2-D float array with k >= 1 and d >= 1.
    """
    check_not_empty(path)
    return validate_centroids(_reader(path)(path), path)


def _reader(path: Path) -> Callable[[Path], np.ndarray]:
    if path.suffix.lower() == NPY_SUFFIX:
        return _read_npy
    if path.suffix.lower() == SKOPS_SUFFIX:
        return _read_skops
    return read_ndarray_file


def _read_npy(path: Path) -> np.ndarray:
    try:
        with open_file(path) as stream:
            array = np.load(stream, allow_pickle=False)
    except (OSError, ValueError) as exc:
        truncated = _npy_truncated(path)
        what = "is truncated" if truncated else "is not a readable .npy array without pickle"
        raise ModelLoadError(f"{path} {what}: {exc}") from exc
    if not isinstance(array, np.ndarray):
        raise ModelLoadError(f"{path}: holds an archive of arrays, expected one array")
    return array


def _npy_truncated(path: Path) -> bool:
    """Whether the .npy file ends before its header, or the data the header declares, does."""
    try:
        with open_file(path) as stream:
            major, _ = np.lib.format.read_magic(stream)
            read_header = {1: np.lib.format.read_array_header_1_0}.get(
                major, np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(stream)
            size = os.fstat(stream.fileno()).st_size
            return size < stream.tell() + math.prod(shape) * dtype.itemsize
    except ValueError as exc:
        return "EOF" in str(exc)
    except OSError:
        return False


def _read_skops(path: Path) -> np.ndarray:
    try:
        import skops.io as sio
        from sklearn.cluster import KMeans, MiniBatchKMeans
    except ImportError as exc:
        raise ModelLoadError(f"{path}: loading .skops files needs smserve[skops]") from exc
    data = _read(path)
    untrusted = _untrusted_types(sio, data, path)
    if untrusted:
        raise ModelLoadError(f"{path}: refusing untrusted types: {', '.join(untrusted)}")
    model = _skops_load(sio, data, path)
    if not isinstance(model, (KMeans, MiniBatchKMeans)):
        raise ModelLoadError(f"{path}: holds a {type(model).__name__}, expected a KMeans")
    centers = getattr(model, "cluster_centers_", None)
    if not isinstance(centers, np.ndarray):
        raise ModelLoadError(f"{path}: the KMeans is not fitted (no cluster_centers_)")
    return centers


def _read(path: Path) -> bytes:
    try:
        return read_bytes(path)
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _untrusted_types(sio: ModuleType, data: bytes, path: Path) -> list[str]:
    # Only the types skops trusts by default (scikit-learn estimators, numpy) may load; a
    # fitted KMeans needs nothing else, so any other type means the file is not a plain KMeans.
    try:
        return list(sio.get_untrusted_types(data=data))
    except Exception as exc:  # skops raises assorted errors for non-skops files
        raise ModelLoadError(f"{path}: not a readable skops file: {exc}") from exc


def _skops_load(sio: ModuleType, data: bytes, path: Path) -> object:
    try:
        return sio.loads(data, trusted=None)
    except Exception as exc:
        raise ModelLoadError(f"{path}: cannot load the skops file: {exc}") from exc


def validate_centroids(array: np.ndarray, path: Path | str) -> Centroids:
    """``array`` as float64 centroids, or ModelLoadError naming ``path`` and what is wrong."""
    if array.ndim != 2:
        raise ModelLoadError(f"{path}: centroids must be 2-D (k, d), got shape {array.shape}")
    k, d = array.shape
    if k < 1 or d < 1:
        raise ModelLoadError(f"{path}: centroids need k >= 1 and d >= 1, got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.floating):
        raise ModelLoadError(f"{path}: centroids must be floating point, got {array.dtype}")
    if not np.isfinite(array).all():
        raise ModelLoadError(f"{path}: centroids contain NaN or infinite values")
    return np.ascontiguousarray(array, dtype=np.float64)
