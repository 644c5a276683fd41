"""k-means selectable outputs: the default pair, contributions and how they relate to
distance_to_cluster under both distance settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from smserve.algorithms.kmeans.algorithm import KMeans
from smserve.config import Settings
from smserve.errors import ModelLoadError
from smserve.types import Batch

ROWS = np.array(
    [[0.5, -1.0, 2.0, 0.0], [9.0, 11.0, 10.5, 8.0], [1.0, 15.0, 14.5, 22.0], [3.0, 3.0, 3.0, 3.0]],
    dtype=np.float32,
)


def _load(model_dir: Path, **settings: object) -> KMeans:
    return KMeans.load(Settings(model_dir=model_dir, **settings), model_dir)  # type: ignore[arg-type]


def test_default_outputs_stay_closest_cluster_and_distance(kmeans_model_dir: Path) -> None:
    kmeans = _load(kmeans_model_dir)
    assert kmeans.default_outputs == ("closest_cluster", "distance_to_cluster")
    assert kmeans.output_keys == ("closest_cluster", "distance_to_cluster", "contributions")
    assert kmeans.predict(Batch(ROWS)).names == ("closest_cluster", "distance_to_cluster")


def test_contributions_are_the_squared_differences_to_the_closest_centroid(
    kmeans_model_dir: Path, kmeans_centroids: np.ndarray
) -> None:
    prediction = _load(kmeans_model_dir).predict(Batch(ROWS), ("closest_cluster", "contributions"))
    closest = prediction.outputs["closest_cluster"].astype(int)
    np.testing.assert_array_equal(closest, [0, 1, 2, 0])
    expected = (ROWS.astype(np.float64) - kmeans_centroids[closest]) ** 2
    np.testing.assert_allclose(prediction.outputs["contributions"], expected, rtol=1e-6)
    assert prediction.outputs["contributions"].dtype == np.float32
    assert prediction.columns == ("contributions",)


@pytest.mark.parametrize("distance", ["euclidean", "squared"])
def test_contributions_sum_to_the_squared_distance(kmeans_model_dir: Path, distance: str) -> None:
    kmeans = _load(kmeans_model_dir, kmeans_distance=distance)
    outputs = kmeans.predict(Batch(ROWS), ("distance_to_cluster", "contributions")).outputs
    total = outputs["contributions"].astype(np.float64).sum(axis=1)
    reported = outputs["distance_to_cluster"].astype(np.float64)
    squared = reported**2 if distance == "euclidean" else reported
    np.testing.assert_allclose(total, squared, rtol=1e-5)


def test_sparse_input_gives_the_dense_equivalents_contributions(kmeans_model_dir: Path) -> None:
    kmeans = _load(kmeans_model_dir)
    dense = ROWS.copy()
    dense[:, 3] = 0.0
    narrow = sp.csr_matrix(dense[:, :3])  # absent trailing column: zeros for k-means
    np.testing.assert_array_equal(
        kmeans.predict(Batch(narrow), ("contributions",)).outputs["contributions"],
        kmeans.predict(Batch(dense), ("contributions",)).outputs["contributions"],
    )


def test_the_endpoint_may_select_outputs(kmeans_model_dir: Path) -> None:
    kmeans = _load(kmeans_model_dir, inference_output=("contributions", "closest_cluster"))
    assert kmeans.predict(Batch(ROWS)).names == ("contributions", "closest_cluster")


def test_unknown_endpoint_outputs_fail_at_load_naming_the_valid_ones(
    kmeans_model_dir: Path,
) -> None:
    with pytest.raises(ModelLoadError, match="probability.*valid outputs: closest_cluster"):
        _load(kmeans_model_dir, inference_output=("probability",))
