"""A fake on-disk model format: a version directory holds ``offset`` (a number), and the
loaded model predicts row sum + offset, so each answer tells which version gave it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from smserve.config import Settings
from smserve.errors import ModelLoadError
from smserve.repository.loading import ModelLoader
from tests.tfserving.fakes import FakeXGBoost


def load_fake(path: Path, platform: str | None) -> FakeXGBoost:
    model_file = path / "offset"
    try:
        text = model_file.read_text()
    except OSError as exc:
        raise ModelLoadError(f"{model_file}: cannot read it ({exc.strerror})") from None
    try:
        return FakeXGBoost(n=2, offset=float(text))
    except ValueError:
        raise ModelLoadError(f"{model_file}: not a number: {text!r}") from None


def write_version(base: Path, version: int, offset: float | str) -> Path:
    """Write version ``version`` atomically (a temporary name, then a rename)."""
    staging = base / f".staging-{version}-{time.monotonic_ns()}"
    staging.mkdir(parents=True)
    (staging / "offset").write_text(str(offset))
    target = base / str(version)
    staging.rename(target)
    return target


@pytest.fixture
def loader() -> ModelLoader:
    return ModelLoader(Settings(), load_fake)
