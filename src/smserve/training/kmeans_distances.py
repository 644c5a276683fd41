"""Each row's nearest k-means centre and its squared distance, in chunks of rows so the rows x
centres distance matrix stays small; dense and CSR rows alike. Distances are float64; which
centre is nearest is searched in float32 (the training passes' hot path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from smserve.scipy_sparse import sparse as sp
from smserve.types import Features, FloatArray

T = TypeVar("T", bound=np.generic)

DISTANCE_CHUNK_ROWS = 65536
DISTANCE_CHUNK_CELLS = 1 << 22  # rows x centres per chunk: 32 MiB of float64 distances


def nearest_squared_distances(features: Features, centers: np.ndarray) -> npt.NDArray[np.float64]:
    """Squared Euclidean distance of each row to its nearest centre, float64 of shape (n,)."""
    # clip: the expansion can go slightly negative through rounding
    return _per_row(features, centers, lambda squared: np.maximum(squared.min(axis=1), 0.0))


def nearest_centers(features: Features, centers: np.ndarray) -> npt.NDArray[np.intp]:
    """The index of each row's nearest centre (the lowest on ties), shape (n,), searched in
    float32 as ``|c|^2 - 2 x.c`` (``|x|^2`` is the same for every centre)."""
    c = np.ascontiguousarray(centers, dtype=np.float32)
    c_squared = np.einsum("ij,ij->i", c, c)
    step = max(1, DISTANCE_CHUNK_CELLS // max(1, c.shape[0]))
    parts = [
        np.asarray(c_squared[None, :] - 2.0 * (features[start : start + step] @ c.T)).argmin(axis=1)
        for start in range(0, features.shape[0], step)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


def squared_distances(features: Features, centers: np.ndarray) -> npt.NDArray[np.float64]:
    """Squared Euclidean distances, rows x centres, float64, clipped at 0 (rounding); the
    whole matrix at once, for the small problems of ``kmeans_lloyd``."""
    c = np.asarray(centers, dtype=np.float64)
    squared = _squared_distances(features, c, np.einsum("ij,ij->i", c, c))
    clipped: npt.NDArray[np.float64] = np.maximum(squared, 0.0)
    return clipped


Pick = Callable[[npt.NDArray[np.float64]], npt.NDArray[T]]


def _per_row(features: Features, centers: np.ndarray, pick: Pick[T]) -> npt.NDArray[T]:
    # In chunks of rows, so the rows x centres distance matrix stays small.
    c = np.asarray(centers, dtype=np.float64)
    c_squared = np.einsum("ij,ij->i", c, c)
    step = max(1, min(DISTANCE_CHUNK_ROWS, DISTANCE_CHUNK_CELLS // max(1, c.shape[0])))
    parts = [
        pick(_squared_distances(features[start : start + step], c, c_squared))
        for start in range(0, features.shape[0], step)
    ]
    return np.concatenate(parts)


def _squared_distances(
    x: Features, c: npt.NDArray[np.float64], c_squared: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    x_squared, cross = _sparse_products(x, c) if sp.issparse(x) else _dense_products(x, c)
    squared: npt.NDArray[np.float64] = x_squared[:, None] - 2.0 * cross + c_squared[None, :]
    return squared


Products = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


def _dense_products(x: FloatArray, c: npt.NDArray[np.float64]) -> Products:
    x64 = np.asarray(x, dtype=np.float64)
    return np.einsum("ij,ij->i", x64, x64), x64 @ c.T


def _sparse_products(x: sp.csr_matrix, c: npt.NDArray[np.float64]) -> Products:
    x64 = x.astype(np.float64)
    return np.asarray(x64.multiply(x64).sum(axis=1)).ravel(), np.asarray(x64 @ c.T)
