from __future__ import annotations

import numpy as np
import pytest

from smserve.training.kmeans_reduce import LocalLloyd, center_count, reduce_centers


@pytest.mark.parametrize(
    ("k", "factor", "n_rows", "expected"),
    [
        (3, None, 90, 30),  # auto: at least 10 centres per cluster
        (2, None, 10**6, 28),  # auto: ceil(ln n) once that passes 10
        (3, None, 20, 20),  # never more centres than rows
        (5, None, 5, 5),
        (3, 4, 90, 12),
        (3, 1, 90, 3),  # 1: no over-sampling
    ],
)
def test_center_count(k: int, factor: int | None, n_rows: int, expected: int) -> None:
    assert center_count(k, factor, n_rows) == expected


def test_auto_trials_follow_the_init_method() -> None:
    assert LocalLloyd().trials == 1
    assert LocalLloyd(init_method="random").trials == 10
    assert LocalLloyd(init_method="random", num_trials=3).trials == 3


@pytest.mark.parametrize("init_method", ["kmeans++", "random"])
def test_reduction_is_a_weighted_k_means_that_skips_empty_centres(init_method: str) -> None:
    centers = np.array([[0.0], [1.0], [10.0], [11.0], [500.0]])
    weights = np.array([3, 1, 1, 3, 0])  # nothing is nearest the outlier centre
    lloyd = LocalLloyd(init_method=init_method, num_trials=5)
    reduced = reduce_centers(centers, weights, 2, lloyd)
    np.testing.assert_allclose(np.sort(reduced[:, 0]), [0.25, 10.75])


def test_with_no_more_live_centres_than_k_the_heaviest_are_kept_in_order() -> None:
    centers = np.array([[0.0], [1.0], [2.0], [3.0]])
    weights = np.array([0, 5, 0, 2])
    reduced = reduce_centers(centers, weights, 3, LocalLloyd())
    np.testing.assert_array_equal(reduced[:, 0], [0.0, 1.0, 3.0])
