"""Fake algorithms shaped like the real ones (names, outputs, objectives) and an in-memory
ModelSource, so TF Serving tests need no model files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
from werkzeug.datastructures import Headers

from smserve.algorithms.base import Capabilities, Scores, default_feature_names
from smserve.algorithms.xgboost.objectives import objective_capabilities
from smserve.config import Settings
from smserve.doors import DoorReply, DoorRequest
from smserve.errors import ModelNotFound, UnknownLabel
from smserve.media import CSV, JSON
from smserve.repository.loading import ModelLoader, ServedModel
from smserve.repository.status import State, VersionStatus
from smserve.tfserving.api import TFServingAPI
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

    @property
    def capabilities(self) -> Capabilities:
        return objective_capabilities(self.objective, self._n)

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

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(Scores.DISTANCE)

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


@dataclass
class FakeSource:
    """Models by name, each a map of AVAILABLE versions; labels by model (a
    ``repository.modes.Models`` with no files behind it)."""

    models: dict[str, dict[int, ServedModel]] = field(default_factory=dict)
    labels: dict[str, Mapping[str, int]] = field(default_factory=dict)
    loader: ModelLoader = field(default_factory=lambda: ModelLoader(Settings()))

    def add(self, name: str, version: int, algorithm: object) -> None:
        served = self.loader.wrap(name, version, algorithm, Path("."))  # type: ignore[arg-type]
        self.models.setdefault(name, {})[version] = served

    @property
    def default_model(self) -> str | None:
        return next(iter(self.models), None)

    def names(self) -> tuple[str, ...]:
        return tuple(self.models)

    def resolve(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> ServedModel:
        versions = self.models.get(name, {})
        if label is not None:
            version = self._label(name, label)
        if version is None:
            if not versions:
                raise ModelNotFound(name, None)
            version = max(versions)
        if version not in versions:
            raise ModelNotFound(name, version, whole_model=not versions)
        return versions[version]

    def _label(self, name: str, label: str) -> int:
        if label not in self.labels.get(name, {}):
            raise UnknownLabel(name, label)
        return self.labels[name][label]

    def statuses(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> Sequence[VersionStatus]:
        if name not in self.models:
            raise ModelNotFound(name, version)
        return [VersionStatus(v, State.AVAILABLE) for v in self.models[name]]


BODY_LIMIT = Settings().max_payload_bytes


def handle(
    api: TFServingAPI, method: str, path: str, body: bytes = b"", headers: Mapping[str, str] = {}
) -> DoorReply:
    """``api``'s answer to one request, as the HTTP layer would hand it over."""
    return api.handle(DoorRequest(method, path, Headers(headers), body))


def served(algorithm: object) -> ServedModel:
    """``algorithm`` served as model ``m`` version 1."""
    return ModelLoader(Settings()).wrap("m", 1, algorithm, Path("."))  # type: ignore[arg-type]
