"""Fixtures for codec tests: the public test vectors the repository keeps under tests/data."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """``tests/data``: third-party test vectors, one folder per format (see its READMEs)."""
    return DATA_DIR
