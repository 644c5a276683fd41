"""Each row's nearest k-means centre and its squared distance, in blocks of rows small enough
that what each block computes stays in the CPU's caches; dense and CSR rows alike. Distances
are float64; which centre is nearest is searched in float32 (the training passes' hot path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from smserve.scipy_sparse import sparse as sp
from smserve.types import Features, FloatArray

T = TypeVar("T", bound=np.generic)

# nearest_squared_distances: rows per chunk (their float64 copy: 3.2 MiB at 50 features, where
# 65,536 rows took 26 MiB and 20 % longer), and rows x centres (32 MiB of float64 distances)
DISTANCE_CHUNK_ROWS = 8192
DISTANCE_CHUNK_CELLS = 1 << 22
NEAREST_BLOCK_CELLS = 1 << 17  # rows x centres per block of nearest_centers: 512 KiB of float32
NEAREST_BLOCK_MIN_ROWS = 256


def nearest_squared_distances(features: Features, centers: np.ndarray) -> npt.NDArray[np.float64]:
    """Squared Euclidean distance of each row to its nearest centre, float64 of shape (n,)."""
    # clip: the expansion can go slightly negative through rounding
    return _per_row(features, centers, lambda squared: np.maximum(squared.min(axis=1), 0.0))


def nearest_centers(features: Features, centers: np.ndarray) -> npt.NDArray[np.intp]:
    """The index of each row's nearest centre (the lowest on ties), shape (n,), searched in
    float32 as ``|c|^2 - 2 x.c`` (``|x|^2`` is the same for every centre).

    Blocks of rows small enough that their distances stay in the CPU's cache, computed into
    one buffer: ``x @ (-2c)^T`` then ``+= |c|^2``, which equals ``|c|^2 - 2 (x @ c^T)`` bit for
    bit (scaling by -2 is exact), without a fresh rows x centres matrix (or three) per block."""
    c = np.ascontiguousarray(centers, dtype=np.float32)
    c_squared = np.einsum("ij,ij->i", c, c)
    minus_twice = (-2.0 * c).T
    step = nearest_block_rows(c.shape[0])
    nearest = np.empty(features.shape[0], dtype=np.intp)
    block = np.empty((min(step, features.shape[0]), c.shape[0]), dtype=np.float32)
    for start in range(0, features.shape[0], step):
        rows = features[start : start + step]
        distances = _products_into(block[: rows.shape[0]], rows, minus_twice)
        distances += c_squared
        distances.argmin(axis=1, out=nearest[start : start + rows.shape[0]])
    return nearest


def nearest_block_rows(n_centers: int) -> int:
    """Rows per block: ``NEAREST_BLOCK_CELLS`` of distances, but at least
    ``NEAREST_BLOCK_MIN_ROWS`` (fewer rows make the product slow: with 14,000 centres, 9 rows a
    block took 3.1x as long as 256) and at most ``DISTANCE_CHUNK_CELLS`` (16 MiB)."""
    rows = max(NEAREST_BLOCK_CELLS // max(1, n_centers), NEAREST_BLOCK_MIN_ROWS)
    return max(1, min(rows, DISTANCE_CHUNK_CELLS // max(1, n_centers)))


def _products_into(out: FloatArray, rows: Features, matrix: FloatArray) -> FloatArray:
    """``rows @ matrix`` written into ``out`` (CSR rows: computed by scipy, then copied)."""
    if sp.issparse(rows):
        out[...] = rows @ matrix
    else:
        np.matmul(rows, matrix, out=out)
    return out


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
