"""Fixtures for codec tests: the shared public test vectors (read in place, never copied)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """``../shared/vectors`` next to the repository root; tests using it skip when absent."""
    path = REPO_ROOT.parent / "shared" / "vectors"
    if not path.is_dir():
        pytest.skip(f"shared test vectors not found at {path}")
    return path
