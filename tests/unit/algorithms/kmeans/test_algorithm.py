"""k-means: predictions against a brute-force float64 reference, sparse input, and loading
every supported artifact (and refusing broken ones)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from smserve import media
from smserve.algorithms.kmeans.algorithm import KMeans
from smserve.algorithms.loading import load_algorithm
from smserve.config import Settings
from smserve.errors import InvalidInput, ModelLoadError
from smserve.types import Batch


def brute_force(rows: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(closest index, Euclidean distance) with an explicit loop over centroids, in float64."""
    x = rows.astype(np.float64)
    distances = np.empty((x.shape[0], centroids.shape[0]))
    for j, centroid in enumerate(centroids.astype(np.float64)):
        distances[:, j] = np.sqrt(((x - centroid) ** 2).sum(axis=1))
    return distances.argmin(axis=1), distances.min(axis=1)


def model(centroids: np.ndarray, squared: bool = False) -> KMeans:
    return KMeans(np.asarray(centroids, dtype=np.float64), squared=squared)


def dense(rows: np.ndarray | list[list[float]]) -> Batch:
    return Batch(np.ascontiguousarray(rows, dtype=np.float32))


@pytest.fixture
def offset_data() -> tuple[np.ndarray, np.ndarray]:
    """Points far from the origin but near their centroids: the hard case for the expansion."""
    rng = np.random.default_rng(3)
    centroids = 1000.0 + rng.normal(size=(5, 7)) * 3
    rows = centroids[rng.integers(0, 5, 200)] + rng.normal(size=(200, 7)) * 0.5
    return rows.astype(np.float32), centroids.astype(np.float32)


def test_matches_brute_force(offset_data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, centroids = offset_data
    prediction = model(centroids).predict(dense(rows))
    closest, distance = brute_force(rows, centroids)
    np.testing.assert_array_equal(prediction.outputs["closest_cluster"], closest)
    np.testing.assert_allclose(prediction.outputs["distance_to_cluster"], distance, rtol=1e-5)


def test_outputs_are_named_float32_vectors(kmeans_centroids: np.ndarray) -> None:
    prediction = model(kmeans_centroids).predict(dense([[1, 1, 1, 1], [9, 9, 9, 9]]))
    assert prediction.names == ("closest_cluster", "distance_to_cluster")
    for _, values in prediction.items():
        assert values.dtype == np.float32
        assert values.shape == (2,)
    np.testing.assert_array_equal(prediction.outputs["closest_cluster"], [0.0, 1.0])
    np.testing.assert_allclose(prediction.outputs["distance_to_cluster"], [2.0, 2.0])


def test_squared_distance(offset_data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, centroids = offset_data
    prediction = model(centroids, squared=True).predict(dense(rows))
    _, distance = brute_force(rows, centroids)
    np.testing.assert_allclose(prediction.outputs["distance_to_cluster"], distance**2, rtol=1e-5)


@pytest.mark.parametrize(
    ("centroids", "row"),
    [
        ([[0.0, 0.0], [2.0, 0.0]], [1.0, 0.0]),
        ([[2.0, 0.0], [0.0, 0.0], [0.0, 2.0]], [1.0, 1.0]),
        ([[1.0, 1.0], [1.0, 1.0]], [5.0, 5.0]),
    ],
    ids=["midpoint", "three-way", "duplicate-centroids"],
)
def test_ties_go_to_the_lowest_index(centroids: list[list[float]], row: list[float]) -> None:
    prediction = model(np.array(centroids)).predict(dense([row]))
    assert prediction.outputs["closest_cluster"][0] == 0.0


def test_single_row(kmeans_centroids: np.ndarray) -> None:
    prediction = model(kmeans_centroids).predict(dense([[1.5, 16, 14, 22]]))
    assert prediction.n_rows == 1
    assert prediction.outputs["closest_cluster"][0] == 2.0
    assert prediction.outputs["distance_to_cluster"][0] == pytest.approx(1.0)


def test_exact_hit_has_zero_distance(kmeans_centroids: np.ndarray) -> None:
    prediction = model(kmeans_centroids).predict(dense(kmeans_centroids))
    np.testing.assert_array_equal(prediction.outputs["closest_cluster"], [0, 1, 2])
    np.testing.assert_array_equal(prediction.outputs["distance_to_cluster"], [0, 0, 0])


def test_sparse_equals_dense(offset_data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, centroids = offset_data
    rows[rows < 1000.0] = 0.0  # make it genuinely sparse
    kmeans = model(centroids)
    from_dense = kmeans.predict(dense(rows))
    from_sparse = kmeans.predict(Batch(sp.csr_matrix(rows)))
    np.testing.assert_array_equal(
        from_sparse.outputs["closest_cluster"], from_dense.outputs["closest_cluster"]
    )
    np.testing.assert_allclose(
        from_sparse.outputs["distance_to_cluster"],
        from_dense.outputs["distance_to_cluster"],
        rtol=1e-6,
    )


def test_narrow_sparse_rows_are_zero_filled(kmeans_centroids: np.ndarray) -> None:
    rows = np.array([[9.0, 9.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    kmeans = model(kmeans_centroids)
    narrow = kmeans.predict(Batch(sp.csr_matrix(rows)))
    padded = kmeans.predict(dense(np.hstack([rows, np.zeros((2, 1), np.float32)])))
    for name, values in padded.items():
        np.testing.assert_allclose(narrow.outputs[name], values, rtol=1e-6)


def test_wrong_dense_width_is_rejected(kmeans_centroids: np.ndarray) -> None:
    with pytest.raises(InvalidInput, match="expected 4 features, got 3"):
        model(kmeans_centroids).predict(dense([[1, 2, 3]]))


def test_wide_sparse_is_rejected(kmeans_centroids: np.ndarray) -> None:
    wide = sp.csr_matrix(np.ones((1, 5), dtype=np.float32))
    with pytest.raises(InvalidInput, match="expected 4 features, got 5"):
        model(kmeans_centroids).predict(Batch(wide))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_missing_dense_value_names_the_row(kmeans_centroids: np.ndarray, bad: float) -> None:
    rows = np.ones((3, 4), dtype=np.float32)
    rows[1, 2] = bad
    with pytest.raises(InvalidInput, match="^row 2, column 3: the value is missing"):
        model(kmeans_centroids).predict(dense(rows))


def test_non_finite_sparse_value_names_the_row(kmeans_centroids: np.ndarray) -> None:
    rows = np.zeros((3, 4), dtype=np.float32)
    rows[0, 0], rows[2, 3] = 1.0, np.nan
    with pytest.raises(InvalidInput, match="^row 3, column 4: "):
        model(kmeans_centroids).predict(Batch(sp.csr_matrix(rows)))


def test_missing_value_is_located_in_the_bodys_terms(kmeans_centroids: np.ndarray) -> None:
    rows = np.ones((2, 4), dtype=np.float32)
    rows[1, 0] = np.nan
    batch = Batch(rows, lambda row, column: f"line {row + 7}, field {column}")
    with pytest.raises(InvalidInput, match="^line 8, field 0: "):
        model(kmeans_centroids).predict(batch)


def test_empty_batch(kmeans_centroids: np.ndarray) -> None:
    prediction = model(kmeans_centroids).predict(dense(np.zeros((0, 4))))
    assert prediction.outputs["closest_cluster"].shape == (0,)


# Loading


def load(model_dir: Path, **settings: object) -> KMeans:
    algorithm = load_algorithm(Settings(model_dir=model_dir).replace(**settings))
    assert isinstance(algorithm, KMeans)
    return algorithm


def test_loads_model_algo_1(kmeans_model_dir: Path, kmeans_centroids: np.ndarray) -> None:
    kmeans = load(kmeans_model_dir)
    np.testing.assert_array_equal(kmeans.centroids, kmeans_centroids)
    assert (kmeans.n_features, kmeans.n_clusters) == (4, 3)
    assert kmeans.feature_names == ()  # centroids name no columns: tables by position
    assert (kmeans.default_content_type, kmeans.default_accept) == (media.CSV, media.JSON)


def test_distance_setting_reaches_the_model(kmeans_model_dir: Path) -> None:
    assert load(kmeans_model_dir, kmeans_distance="squared").squared
    assert not load(kmeans_model_dir).squared


def test_loads_npy(tmp_path: Path, kmeans_centroids: np.ndarray) -> None:
    np.save(tmp_path / "centroids.npy", kmeans_centroids.astype(np.float64))
    np.testing.assert_array_equal(load(tmp_path).centroids, kmeans_centroids)


def test_loads_skops_kmeans_and_agrees_with_sklearn(tmp_path: Path) -> None:
    sio = pytest.importorskip("skops.io")
    from sklearn.cluster import KMeans as SklearnKMeans

    rows = np.random.default_rng(0).normal(size=(40, 4)).astype(np.float32)
    fitted = SklearnKMeans(n_clusters=3, n_init=1, random_state=0).fit(rows)
    sio.dump(fitted, tmp_path / "model.skops")
    prediction = load(tmp_path).predict(dense(rows))
    np.testing.assert_array_equal(prediction.outputs["closest_cluster"], fitted.predict(rows))


class NotAnEstimator:
    """A type skops does not trust by default."""


def test_skops_with_untrusted_types_is_refused(tmp_path: Path) -> None:
    sio = pytest.importorskip("skops.io")
    sio.dump({"model": NotAnEstimator()}, tmp_path / "model.skops")
    with pytest.raises(ModelLoadError, match="untrusted types: .*NotAnEstimator"):
        load(tmp_path)


def test_skops_of_another_estimator_is_refused(tmp_path: Path) -> None:
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LinearRegression

    sio.dump(LinearRegression(), tmp_path / "model.skops")
    with pytest.raises(ModelLoadError, match="holds a LinearRegression"):
        load(tmp_path)


@pytest.mark.parametrize(
    ("array", "reason"),
    [
        (np.zeros(4), "must be 2-D"),
        (np.zeros((2, 2, 2)), "must be 2-D"),
        (np.zeros((0, 4)), "k >= 1"),
        (np.zeros((3, 0)), "d >= 1"),
        (np.array([[1.0, np.nan]]), "NaN or infinite"),
        (np.array([[1.0, np.inf]]), "NaN or infinite"),
        (np.zeros((2, 2), dtype=np.int32), "floating point"),
    ],
    ids=["1-d", "3-d", "k=0", "d=0", "nan", "inf", "int"],
)
def test_bad_centroids_are_refused(tmp_path: Path, array: np.ndarray, reason: str) -> None:
    np.save(tmp_path / "centroids.npy", array)
    with pytest.raises(ModelLoadError, match=reason) as info:
        load(tmp_path)
    assert "centroids.npy" in str(info.value)


def test_object_npy_needs_pickle_and_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "centroids.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ModelLoadError, match="without pickle"):
        load(tmp_path)


def test_several_artifacts_are_refused(kmeans_model_dir: Path) -> None:
    np.save(kmeans_model_dir / "centroids.npy", np.ones((2, 2)))
    with pytest.raises(ModelLoadError, match="several k-means models"):
        load(kmeans_model_dir)


def test_forced_kmeans_without_artifact_names_what_is_expected(tmp_path: Path) -> None:
    (tmp_path / "xgboost-model").write_bytes(b"{}")
    with pytest.raises(ModelLoadError, match="model_algo-1"):
        load(tmp_path, algorithm="kmeans")


def test_corrupt_model_algo_1_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "model_algo-1").write_bytes(b"PK\x03\x04 not an ndarray file")
    with pytest.raises(ModelLoadError, match="model_algo-1 is a zip archive"):
        load(tmp_path)
    (tmp_path / "model_algo-1").write_bytes(b"\x12\x01\0\0\0\0\0\0" + b"\0" * 8 + b"\1" + b"\0" * 7)
    with pytest.raises(ModelLoadError, match="model_algo-1: MXNet NDArray file is truncated"):
        load(tmp_path)
