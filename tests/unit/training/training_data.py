"""Helpers for the training tests: a temporary /opt/ml layout and tiny data sets."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from smserve.training import run


class TrainingJob:
    """Writes the SageMaker training layout under ``base`` and runs ``smserve.training.run``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.config: dict[str, dict[str, str]] = {}

    @property
    def model_dir(self) -> Path:
        return self.base / "model"

    @property
    def failure_file(self) -> Path:
        return self.base / "output" / "failure"

    @property
    def failure(self) -> str:
        return self.failure_file.read_text(encoding="utf-8")

    def hyperparameters(self, **values: str) -> TrainingJob:
        self._write(self.base / "input/config/hyperparameters.json", json.dumps(values))
        return self

    def channel(
        self, name: str, files: Mapping[str, str | bytes], content_type: str | None = None
    ) -> TrainingJob:
        for relative, content in files.items():
            self._write(self.base / "input/data" / name / relative, content)
        self.config[name] = {"TrainingInputMode": "File"}
        if content_type is not None:
            self.config[name]["ContentType"] = content_type
        self._write(self.base / "input/config/inputdataconfig.json", json.dumps(self.config))
        return self

    def run(self, **environ: str) -> int:
        return run({"SMSERVE_TRAINING_BASE_DIR": str(self.base), **environ})

    @staticmethod
    def _write(path: Path, content: str | bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def blobs(n_rows: int = 60, n_features: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three well-separated clusters: float32 features and their cluster index as label."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n_rows)
    centres = np.array([[0.0] * n_features, [10.0] * n_features, [-10.0] * n_features])
    features = centres[labels] + rng.normal(0, 0.5, (n_rows, n_features))
    return features.astype(np.float32), labels.astype(np.float32)


def to_csv(features: np.ndarray, labels: np.ndarray | None) -> str:
    table = features if labels is None else np.column_stack([labels, features])
    buffer = io.StringIO()
    np.savetxt(buffer, table, delimiter=",", fmt="%.6g")
    return buffer.getvalue()


def to_libsvm(features: np.ndarray, labels: np.ndarray, base: int = 0) -> str:
    lines = []
    for label, row in zip(labels, features, strict=True):
        cells = " ".join(f"{j + base}:{v:.6g}" for j, v in enumerate(row) if v != 0)
        lines.append(f"{label:g} {cells}")
    return "\n".join(lines) + "\n"


def to_recordio(features: np.ndarray, labels: np.ndarray | None) -> bytes:
    """RecordIO-protobuf written by the real SageMaker SDK (2.x)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the SDK's "v2 is deprecated" notice
        from sagemaker.amazon.common import write_numpy_to_dense_tensor

        buffer = io.BytesIO()
        write_numpy_to_dense_tensor(buffer, features, labels)
    return buffer.getvalue()


def quarter_steps(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features exact in CSV and libsvm text (quarters; a quarter of them 0, which libsvm
    leaves out, so they are missing there) and a noisy binary label."""
    rng = np.random.default_rng(seed)
    features = (rng.integers(-40, 40, size=(n_rows, 4)) / 4).astype(np.float32)
    features[rng.random(features.shape) < 0.25] = 0.0
    noise = rng.normal(0, 2, n_rows)
    labels = (features[:, 0] + features[:, 1] * features[:, 2] + noise > 0).astype(np.float32)
    return features, labels
