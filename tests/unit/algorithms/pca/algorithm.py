"""The test PCA: each row projected on the components, ``(x - mean) @ v``, as SageMaker's
PCA answers ``projection``."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from smserve import media
from smserve.algorithms.base import NO_CAPABILITIES, Capabilities
from smserve.algorithms.ndarray import read_ndarray_dict
from smserve.errors import InvalidInput
from smserve.types import Batch, Prediction


class PCAModel:
    name: ClassVar[str] = "pca"
    default_content_type: ClassVar[str] = media.CSV
    default_accept: ClassVar[str] = media.JSON

    def __init__(self, mean: np.ndarray, v: np.ndarray) -> None:
        self.mean = mean.reshape(-1).astype(np.float64)
        self.v = v.astype(np.float64)

    @classmethod
    def load(cls, model_dir: Path) -> PCAModel:
        arrays = read_ndarray_dict(model_dir / "model_algo-1")
        return cls(arrays["mean"], arrays["v"])

    @property
    def n_features(self) -> int:
        return int(self.v.shape[0])

    @property
    def feature_names(self) -> tuple[str, ...]:
        return ()

    @property
    def capabilities(self) -> Capabilities:
        return NO_CAPABILITIES

    def predict(self, batch: Batch) -> Prediction:
        features = np.asarray(
            batch.features.todense() if hasattr(batch.features, "todense") else batch.features
        )
        if features.shape[1] != self.n_features:
            raise InvalidInput(f"expected {self.n_features} columns, got {features.shape[1]}")
        projection = (features.astype(np.float64) - self.mean) @ self.v
        return Prediction({"projection": projection.astype(np.float32)})
