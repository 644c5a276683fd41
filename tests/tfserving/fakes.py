"""Fake algorithms shaped like the real ones (names, outputs, objectives) and an in-memory
ModelSource, so TF Serving tests need no model files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from smserve.algorithms.base import default_feature_names
from smserve.errors import InvalidInput, ModelNotFound
from smserve.media import CSV, JSON
from smserve.tfserving.servable import Servable, build_servable
from smserve.tfserving.status import State, VersionStatus
from smserve.types import Batch, Prediction


class FakeXGBoost:
    """``score`` = row sum (+ ``offset``), or its logistic for binary:logistic; softmax over
    the first ``num_class`` columns for multi:softprob."""

    name: ClassVar[str] = "xgboost"
    default_content_type: ClassVar[str] = CSV
    default_accept: ClassVar[str] = JSON

    def __init__(
        self, objective: str = "reg:squarederror", n: int = 3, offset: float = 0.0
    ) -> None:
        self.objective = objective
        self._n = n
        self.offset = offset
        self.calls = 0

    @property
    def n_features(self) -> int | None:
        return self._n

    @property
    def feature_names(self) -> tuple[str, ...]:
        return default_feature_names(self.n_features)

    def predict(self, batch: Batch) -> Prediction:
        self.calls += 1
        x = np.asarray(batch.features, dtype=np.float32)
        total = x.sum(axis=1) + np.float32(self.offset)
        if self.objective == "binary:logistic":
            return Prediction({"score": (1 / (1 + np.exp(-total))).astype(np.float32)})
        if self.objective == "multi:softprob":
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return Prediction({"score": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)})
        return Prediction({"score": total.astype(np.float32)})


class FakeKMeans:
    """Two clusters at 0 and at 10 on every axis."""

    name: ClassVar[str] = "kmeans"
    default_content_type: ClassVar[str] = CSV
    default_accept: ClassVar[str] = JSON

    def __init__(self, n: int = 2) -> None:
        self.centroids = np.array([[0.0] * n, [10.0] * n], dtype=np.float32)

    @property
    def n_features(self) -> int | None:
        return int(self.centroids.shape[1])

    @property
    def feature_names(self) -> tuple[str, ...]:
        return default_feature_names(self.n_features)

    def predict(self, batch: Batch) -> Prediction:
        x = np.asarray(batch.features, dtype=np.float32)
        d = np.sqrt(((x[:, None, :] - self.centroids[None]) ** 2).sum(axis=2))
        closest = d.argmin(axis=1)
        return Prediction(
            {
                "closest_cluster": closest.astype(np.float32),
                "distance_to_cluster": d[np.arange(len(x)), closest].astype(np.float32),
            }
        )


@dataclass(frozen=True)
class FakeServed:
    name: str
    version: int
    servable: Servable


@dataclass
class FakeSource:
    """Models by name, each a map of AVAILABLE versions; labels by model."""

    models: dict[str, dict[int, Servable]] = field(default_factory=dict)
    labels: dict[str, Mapping[str, int]] = field(default_factory=dict)

    def add(self, name: str, version: int, algorithm: object) -> None:
        self.models.setdefault(name, {})[version] = build_servable(algorithm)  # type: ignore[arg-type]

    def served(self, name: str, version: int | None, label: str | None) -> FakeServed:
        versions = self.models.get(name, {})
        if label is not None:
            version = self._label(name, label)
        if version is None:
            if not versions:
                raise ModelNotFound(f"Servable not found for request: Latest({name})")
            version = max(versions)
        if version not in versions:
            raise ModelNotFound(f"Servable not found for request: Specific({name}, {version})")
        return FakeServed(name, version, versions[version])

    def _label(self, name: str, label: str) -> int:
        if label not in self.labels.get(name, {}):
            raise InvalidInput(f"Unrecognized servable version label: {label}")
        return self.labels[name][label]

    def statuses(
        self, name: str, version: int | None, label: str | None
    ) -> Sequence[VersionStatus]:
        if name not in self.models:
            raise ModelNotFound(f"Could not find any versions of model {name}")
        return [VersionStatus(v, State.AVAILABLE) for v in self.models[name]]
