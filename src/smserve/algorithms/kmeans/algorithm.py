"""k-means inference: the closest centroid to each row and the distance to it, vectorised.

Outputs ``closest_cluster`` (float32 index, lowest on ties) and ``distance_to_cluster``
(Euclidean, or squared Euclidean when configured) by default; ``contributions``, each
feature's share ``(x_j - c_j)^2`` of the squared distance to the closest centroid, on request
(SAGEMAKER_INFERENCE_OUTPUT or per request). The shares sum to the squared distance: to
``distance_to_cluster ** 2`` with SMSERVE_KMEANS_DISTANCE=euclidean, to
``distance_to_cluster`` itself with ``squared`` (within float32 rounding). Loading lives in
``centroids``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from smserve import media
from smserve.algorithms.base import Capabilities, Scores
from smserve.algorithms.kmeans.centroids import Centroids, find_artifact, load_centroids
from smserve.config import Settings
from smserve.errors import InvalidInput, ModelLoadError
from smserve.scipy_sparse import sparse as sp
from smserve.types import Batch, FloatArray, Locate, Prediction

Float64Array = npt.NDArray[np.float64]
OUTPUT_KEYS = ("closest_cluster", "distance_to_cluster", "contributions")
DEFAULT_OUTPUTS = OUTPUT_KEYS[:2]
WIDE_OUTPUTS = frozenset(OUTPUT_KEYS[2:])  # one value per feature


class KMeans:
    """Centroids of shape (k, d) and the distance convention.

    Sparse input (libsvm, sparse RecordIO/JSON) means absent entries are zeros, so a CSR batch
    narrower than d is taken as having zeros in its missing trailing columns. Dense input must
    have exactly d columns and no missing (NaN) or infinite values: k-means cannot impute them.
    """

    name: ClassVar[str] = "kmeans"
    default_content_type: ClassVar[str] = media.CSV
    default_accept: ClassVar[str] = media.JSON

    def __init__(
        self,
        centroids: Centroids,
        squared: bool = False,
        outputs: tuple[str, ...] = DEFAULT_OUTPUTS,
    ) -> None:
        self.centroids = centroids
        self.squared = squared
        self.outputs = outputs
        # ||c||^2 once, so each request costs one matrix product.
        self._centroid_norms = np.einsum("ij,ij->i", centroids, centroids)

    @classmethod
    def load(cls, settings: Settings, model_dir: Path) -> KMeans:
        """Load the one k-means artifact in ``model_dir``; raises ModelLoadError."""
        centroids = load_centroids(find_artifact(model_dir))
        outputs = _endpoint_outputs(settings.inference_output)
        return cls(centroids, settings.kmeans_distance == "squared", outputs)

    @property
    def n_features(self) -> int:
        return int(self.centroids.shape[1])

    @property
    def feature_names(self) -> tuple[str, ...]:
        """Centroids name no columns: tables are read by position."""
        return ()

    @property
    def capabilities(self) -> Capabilities:
        """Classifies each row as its closest cluster, scored by the distance to it."""
        return Capabilities(Scores.DISTANCE)

    @property
    def n_clusters(self) -> int:
        return int(self.centroids.shape[0])

    @property
    def output_keys(self) -> tuple[str, ...]:
        return OUTPUT_KEYS

    @property
    def default_outputs(self) -> tuple[str, ...]:
        return self.outputs

    @property
    def wide_outputs(self) -> frozenset[str]:
        return WIDE_OUTPUTS

    def predict(
        self, batch: Batch, outputs: tuple[str, ...] | None = None, spare_cpu: bool = False
    ) -> Prediction:
        """Closest centroid per row: the endpoint's outputs, or ``outputs`` (keys of
        OUTPUT_KEYS). Raises InvalidInput for a wrong column count or, for dense input, a
        missing value. k-means ignores ``spare_cpu``."""
        keys = tuple(dict.fromkeys(self.outputs if outputs is None else outputs))
        squared = self._squared_distances(batch.features, batch.locate)
        closest = squared.argmin(axis=1)  # lowest index on ties
        best = squared[np.arange(closest.size), closest]
        distance = best if self.squared else np.sqrt(best)
        arrays = {
            "closest_cluster": closest.astype(np.float32),
            "distance_to_cluster": distance.astype(np.float32),
        }
        if "contributions" in keys:
            arrays["contributions"] = self._contributions(batch.features, closest)
        columns = ("contributions",) if "contributions" in keys else ()
        return Prediction({key: arrays[key] for key in keys}, columns=columns)

    def _contributions(
        self, features: FloatArray | sp.csr_matrix, closest: np.ndarray
    ) -> np.ndarray:
        """(x_j - c_j)^2 for the closest centroid c, of shape (n_rows, d), float32."""
        if isinstance(features, np.ndarray):
            rows = features.astype(np.float64)
        else:  # the output is (n_rows, d) anyway; absent entries are zeros
            rows = np.zeros((features.shape[0], self.n_features))
            rows[:, : features.shape[1]] = features.toarray()
        difference = rows - self.centroids[closest]
        return np.asarray(difference * difference, dtype=np.float32)

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


def _endpoint_outputs(keys: tuple[str, ...] | None) -> tuple[str, ...]:
    """SAGEMAKER_INFERENCE_OUTPUT's keys (distinct), or the default; raises ModelLoadError."""
    if keys is None:
        return DEFAULT_OUTPUTS
    unknown = [k for k in keys if k not in OUTPUT_KEYS]
    if unknown:
        raise ModelLoadError(
            f"SAGEMAKER_INFERENCE_OUTPUT names unknown k-means outputs: {', '.join(unknown)}; "
            f"valid outputs: {', '.join(OUTPUT_KEYS)}"
        )
    return tuple(dict.fromkeys(keys))
