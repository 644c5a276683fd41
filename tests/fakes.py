"""Fake algorithms and codecs, so service and HTTP tests exercise no ML or format code.

Import as ``from tests.fakes import ...`` (pytest puts the repository root on sys.path)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from smserve.algorithms.base import NO_CAPABILITIES, Capabilities, default_feature_names
from smserve.codecs import CodecRegistry
from smserve.codecs.base import TEXT_PARAMETERS, UNNAMED, DecodeContext
from smserve.config import Settings
from smserve.errors import DecodeError
from smserve.media import CSV, JSON, MediaType
from smserve.service import InferenceService
from smserve.types import Batch, Prediction


class EchoAlgorithm:
    """Answers each row's sum as ``score`` and counts its calls."""

    name: ClassVar[str] = "echo"
    default_content_type: ClassVar[str] = CSV
    default_accept: ClassVar[str] = JSON

    def __init__(self) -> None:
        self.calls = 0

    @property
    def n_features(self) -> int | None:
        return None

    @property
    def feature_names(self) -> tuple[str, ...]:
        return default_feature_names(self.n_features)

    @property
    def capabilities(self) -> Capabilities:
        return NO_CAPABILITIES

    def predict(self, batch: Batch) -> Prediction:
        self.calls += 1
        return Prediction({"score": np.asarray(batch.features.sum(axis=1)).ravel()})


class FailingAlgorithm(EchoAlgorithm):
    """Fails the way a bug would: with an exception that is not a ServingError."""

    SECRET = "secret detail that must stay in the log"

    def predict(self, batch: Batch) -> Prediction:
        raise RuntimeError(self.SECRET)


class SlowAlgorithm(EchoAlgorithm):
    """Sleeps ``delay_s`` before answering like EchoAlgorithm."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def predict(self, batch: Batch) -> Prediction:
        time.sleep(self.delay_s)
        return super().predict(batch)


class FakeCsvCodec:
    """text/csv: comma-separated floats in, one score per line out."""

    media_type = CSV
    chunked = False
    parameters: Mapping[str, frozenset[str] | None] = TEXT_PARAMETERS

    def __init__(self) -> None:
        self.decoded = 0

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        self.decoded += 1
        try:
            rows = [[float(cell) for cell in line.split(",")] for line in body.decode().split()]
        except ValueError as exc:
            raise DecodeError(f"text/csv: {exc}") from exc
        return Batch(np.ascontiguousarray(rows, dtype=np.float32))

    def encode(self, prediction: Prediction) -> bytes:
        return "".join(f"{value:g}\n" for value in prediction.outputs["score"]).encode()


class FakeJsonCodec:
    """application/json: ``{"instances": [[...], ...]}`` in, ``{"predictions": [...]}`` out."""

    media_type = JSON
    chunked = False
    parameters: Mapping[str, frozenset[str] | None] = {}

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        rows = json.loads(body)["instances"]
        return Batch(np.ascontiguousarray(rows, dtype=np.float32))

    def encode(self, prediction: Prediction) -> bytes:
        scores = [{"score": float(v)} for v in prediction.outputs["score"]]
        return json.dumps({"predictions": scores}).encode()


def fake_registry() -> CodecRegistry:
    """CSV and JSON in; JSON (listed first) and CSV out."""
    csv, json_codec = FakeCsvCodec(), FakeJsonCodec()
    return CodecRegistry(decoders=[csv, json_codec], encoders=[json_codec, csv])


def fake_service(algorithm: EchoAlgorithm, settings: Settings | None = None) -> InferenceService:
    return InferenceService(algorithm, fake_registry(), settings or Settings())
