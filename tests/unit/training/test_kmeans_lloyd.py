from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans

from smserve.training.kmeans_distances import squared_distances
from smserve.training.kmeans_lloyd import lloyd, plusplus, random_start


def blobs(seed: int, per_blob: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Five well-separated blobs in 3 dimensions; their true centres."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(-100, 100, size=(5, 3))
    points = np.concatenate([c + rng.normal(0, 1, size=(per_blob, 3)) for c in truth])
    return points, truth


def test_squared_distances_match_the_direct_sum() -> None:
    rng = np.random.default_rng(0)
    points, centers = rng.normal(size=(30, 4)), rng.normal(size=(6, 4))
    direct = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(squared_distances(points, centers), direct, atol=1e-12)


def test_plusplus_puts_one_centre_in_each_separated_blob() -> None:
    points, truth = blobs(1)
    chosen = plusplus(points, np.ones(len(points)), 5, np.random.default_rng(0))
    nearest_truth = squared_distances(chosen, truth).argmin(axis=1)
    assert sorted(nearest_truth) == [0, 1, 2, 3, 4]
    assert all(any(np.array_equal(c, p) for p in points) for c in chosen)


def test_plusplus_never_picks_a_point_of_weight_zero() -> None:
    points, _ = blobs(2)
    weights = np.ones(len(points))
    weights[::2] = 0.0
    for seed in range(5):
        chosen = plusplus(points, weights, 8, np.random.default_rng(seed))
        index = squared_distances(chosen, points).argmin(axis=1)
        assert np.all(weights[index] > 0), seed


def test_plusplus_with_fewer_distinct_points_than_centres_still_returns_n() -> None:
    points = np.repeat(np.array([[0.0, 0.0], [5.0, 5.0]]), 4, axis=0)
    chosen = plusplus(points, np.ones(8), 3, np.random.default_rng(0))
    assert chosen.shape == (3, 2)


def test_random_start_draws_distinct_weighted_points() -> None:
    points, _ = blobs(3)
    weights = np.zeros(len(points))
    weights[:7] = 1.0
    chosen = random_start(points, weights, 7, np.random.default_rng(0))
    np.testing.assert_array_equal(chosen, points[:7])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lloyd_matches_scikit_learn_from_the_same_start(seed: int) -> None:
    points, _ = blobs(seed)
    weights = np.random.default_rng(seed).integers(1, 20, size=len(points)).astype(np.float64)
    start = points[np.random.default_rng(seed).choice(len(points), 5, replace=False)]
    ours, inertia = lloyd(points, weights, start, max_iter=300, tol=1e-4)
    theirs = KMeans(5, init=start, n_init=1, max_iter=300, tol=1e-4, algorithm="lloyd")
    theirs.fit(points, sample_weight=weights)
    np.testing.assert_allclose(ours, theirs.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert inertia == pytest.approx(theirs.inertia_, rel=1e-9)


def test_lloyd_moves_an_emptied_centre_to_the_farthest_point() -> None:
    points = np.array([[0.0], [1.0], [10.0], [11.0], [30.0]])
    start = np.array([[0.5], [0.5], [10.5]])  # the second centre never wins a point
    centers, _ = lloyd(points, np.ones(5), start, max_iter=1, tol=0.0)
    np.testing.assert_allclose(centers[:, 0], [0.5, 30.0, 17.0])


def test_lloyd_stops_at_max_iter() -> None:
    points, _ = blobs(4)
    start = points[:5]
    once, _ = lloyd(points, np.ones(len(points)), start, max_iter=1, tol=0.0)
    many, _ = lloyd(points, np.ones(len(points)), start, max_iter=50, tol=0.0)
    assert not np.allclose(once, many)
