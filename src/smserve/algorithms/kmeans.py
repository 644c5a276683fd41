"""k-means inference: the closest centroid to each row and the distance to it, vectorised.

Outputs ``closest_cluster`` (float32 index, lowest on ties) and ``distance_to_cluster``
(Euclidean, or squared Euclidean when configured). Loading lives in ``centroids``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from smserve import media
from smserve.algorithms.base import default_feature_names
from smserve.algorithms.centroids import Centroids, find_artifact, load_centroids
from smserve.config import Settings
from smserve.errors import InvalidInput
from smserve.types import Batch, FloatArray, Locate, Prediction

Float64Array = npt.NDArray[np.float64]


class KMeans:
    """Centroids of shape (k, d) and the distance convention.

    Sparse input (libsvm, sparse RecordIO/JSON) means absent entries are zeros, so a CSR batch
    narrower than d is taken as having zeros in its missing trailing columns. Dense input must
    have exactly d columns and no missing (NaN) or infinite values: k-means cannot impute them.
    """

    name: ClassVar[str] = "kmeans"
    default_content_type: ClassVar[str] = media.CSV
    default_accept: ClassVar[str] = media.JSON

    def __init__(self, centroids: Centroids, squared: bool = False) -> None:
        self.centroids = centroids
        self.squared = squared
        # ||c||^2 once, so each request costs one matrix product.
        self._centroid_norms = np.einsum("ij,ij->i", centroids, centroids)

    @classmethod
    def load(cls, settings: Settings, model_dir: Path) -> KMeans:
        """Load the one k-means artifact in ``model_dir``; raises ModelLoadError."""
        centroids = load_centroids(find_artifact(model_dir))
        return cls(centroids, squared=settings.kmeans_distance == "squared")

    @property
    def n_features(self) -> int:
        return int(self.centroids.shape[1])

    @property
    def feature_names(self) -> tuple[str, ...]:
        return default_feature_names(self.n_features)

    @property
    def n_clusters(self) -> int:
        return int(self.centroids.shape[0])

    def predict(self, batch: Batch) -> Prediction:
        """Closest centroid per row. Raises InvalidInput for a wrong column count or, for
        dense input, a missing value."""
        squared = self._squared_distances(batch.features, batch.locate)
        closest = squared.argmin(axis=1)  # lowest index on ties
        best = squared[np.arange(closest.size), closest]
        distance = best if self.squared else np.sqrt(best)
        return Prediction(
            {
                "closest_cluster": closest.astype(np.float32),
                "distance_to_cluster": distance.astype(np.float32),
            }
        )

    def _squared_distances(
        self, features: FloatArray | sp.csr_matrix, locate: Locate
    ) -> Float64Array:
        """||x - c||^2 of shape (n_rows, k) via ||x||^2 - 2 x.c + ||c||^2.

        In float64: the expansion subtracts large, nearly equal terms, so in float32 a point
        far from the origin but close to a centroid loses every significant digit (error ~
        1e-7 * ||x||^2). float64 keeps the result accurate to ~1e-5 relative after the cast.
        """
        if isinstance(features, np.ndarray):
            row_norms, products = self._dense_terms(features, locate)
        else:
            row_norms, products = self._sparse_terms(features, locate)
        squared: Float64Array = row_norms[:, np.newaxis] - 2.0 * products + self._centroid_norms
        # Rounding can push a true zero slightly below it; sqrt would give NaN.
        np.maximum(squared, 0.0, out=squared)
        return squared

    def _dense_terms(
        self, features: FloatArray, locate: Locate
    ) -> tuple[Float64Array, Float64Array]:
        self._check_dense(features, locate)
        rows = features.astype(np.float64)
        return np.einsum("ij,ij->i", rows, rows), rows @ self.centroids.T

    def _sparse_terms(
        self, features: sp.csr_matrix, locate: Locate
    ) -> tuple[Float64Array, Float64Array]:
        self._check_sparse(features, locate)
        rows = features.astype(np.float64)  # converts the stored values only, never densifies
        norms = np.asarray(rows.multiply(rows).sum(axis=1)).ravel()
        # Columns past the batch's width are zeros, so they add nothing to x.c.
        products = np.asarray(rows @ self.centroids[:, : rows.shape[1]].T)
        return norms, products

    def _check_dense(self, features: FloatArray, locate: Locate) -> None:
        if features.shape[1] != self.n_features:
            raise InvalidInput(f"expected {self.n_features} features, got {features.shape[1]}")
        bad = ~np.isfinite(features)
        if bad.any():
            row, column = divmod(int(np.argmax(bad)), features.shape[1])
            raise _not_finite(locate(row, column))

    def _check_sparse(self, features: sp.csr_matrix, locate: Locate) -> None:
        if features.shape[1] > self.n_features:
            raise InvalidInput(
                f"expected {self.n_features} features, got {features.shape[1]} "
                "(sparse input may have fewer, never more)"
            )
        bad = np.flatnonzero(~np.isfinite(features.data))
        if bad.size:
            row = int(np.searchsorted(features.indptr, bad[0], side="right")) - 1
            raise _not_finite(locate(row, int(features.indices[bad[0]])))


def _not_finite(where: str) -> InvalidInput:
    return InvalidInput(
        f"{where}: the value is missing (NaN, null or empty) or not finite; "
        "k-means needs every feature"
    )
