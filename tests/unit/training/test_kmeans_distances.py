from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from smserve.training import kmeans_distances
from smserve.training.kmeans_distances import nearest_centers, nearest_squared_distances


def test_nearest_squared_distances_match_brute_force_for_dense_and_sparse() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 5)).astype(np.float32)
    x[x < 0] = 0.0
    centers = rng.normal(size=(4, 5))
    squared = ((x[:, None, :].astype(np.float64) - centers[None]) ** 2).sum(-1)
    expected, nearest = squared.min(1), squared.argmin(1)
    for features in (x, sp.csr_matrix(x)):
        np.testing.assert_allclose(
            nearest_squared_distances(features, centers), expected, rtol=1e-9
        )
        np.testing.assert_array_equal(nearest_centers(features, centers), nearest)


def one_matrix_search(features: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """The search written plainly: every distance of the rows at once, ``|c|^2 - 2 x.c``."""
    c = centers.astype(np.float32)
    return np.asarray((c * c).sum(axis=1)[None, :] - 2.0 * (features @ c.T)).argmin(axis=1)


@pytest.mark.parametrize("n_centers", [1, 7, 140, 3000])
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_nearest_centers_in_blocks_equal_the_one_matrix_search_bit_for_bit(
    n_centers: int, layout: str
) -> None:
    rng = np.random.default_rng(n_centers)
    step = kmeans_distances.nearest_block_rows(n_centers)
    rows = rng.normal(size=(2 * step + 17, 50)).astype(np.float32)  # three blocks, the last short
    rows[rows < -1] = 0.0
    centers = rng.normal(size=(n_centers, 50))
    features = rows if layout == "dense" else sp.csr_matrix(rows)
    expected = one_matrix_search(features, centers)
    np.testing.assert_array_equal(nearest_centers(features, centers), expected)


def test_nearest_centers_takes_the_lowest_of_equal_centres_in_every_block() -> None:
    rng = np.random.default_rng(3)
    centers = np.repeat(rng.normal(size=(5, 4)), 2, axis=0)  # each centre twice: 0=1, 2=3, ...
    rows = rng.normal(size=(3 * kmeans_distances.NEAREST_BLOCK_CELLS // 10, 4)).astype(np.float32)
    nearest = nearest_centers(rows, centers)
    assert (nearest % 2 == 0).all()
    np.testing.assert_array_equal(nearest, one_matrix_search(rows, centers))


@pytest.mark.parametrize("n_centers", [1, 140, 3000, 60_000, 10_000_000])
def test_a_block_holds_enough_rows_for_a_fast_product_and_bounded_distances(
    n_centers: int,
) -> None:
    rows = kmeans_distances.nearest_block_rows(n_centers)
    assert rows >= 1
    assert rows * n_centers <= max(kmeans_distances.DISTANCE_CHUNK_CELLS, n_centers)
    enough = kmeans_distances.NEAREST_BLOCK_MIN_ROWS * n_centers
    assert rows >= kmeans_distances.NEAREST_BLOCK_MIN_ROWS or enough > (
        kmeans_distances.DISTANCE_CHUNK_CELLS
    )


def test_no_rows_give_no_indices() -> None:
    nearest = nearest_centers(np.zeros((0, 3), dtype=np.float32), np.ones((2, 3)))
    assert nearest.shape == (0,)
    assert nearest.dtype == np.intp


def test_squared_distances_over_many_chunks_match_brute_force() -> None:
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(2 * kmeans_distances.DISTANCE_CHUNK_ROWS + 5, 6)).astype(np.float32)
    centers = rng.normal(size=(3, 6))
    squared = ((rows[:, None, :].astype(np.float64) - centers[None]) ** 2).sum(-1)
    np.testing.assert_allclose(
        nearest_squared_distances(rows, centers), squared.min(1), rtol=1e-9, atol=1e-12
    )
