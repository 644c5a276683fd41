"""Fixtures for the training tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .training_data import TrainingJob


@pytest.fixture
def job(tmp_path: Path) -> TrainingJob:
    """An empty training layout under ``tmp_path``; see ``TrainingJob``."""
    return TrainingJob(tmp_path / "opt_ml")
