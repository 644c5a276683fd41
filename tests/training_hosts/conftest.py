"""Fixtures for the multi-host training tests (real processes on loopback)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def binary_rows() -> tuple[np.ndarray, np.ndarray]:
    """600 rows, 4 features, a noisy binary label from the first two."""
    rng = np.random.default_rng(7)
    features = rng.normal(size=(600, 4)).astype(np.float32)
    noise = rng.normal(0, 0.3, 600)
    labels = ((features[:, 0] + features[:, 1] + noise) > 0).astype(np.float32)
    return features, labels


@pytest.fixture(scope="module")
def cluster_rows() -> np.ndarray:
    """900 rows of 3 features in 4 separated clusters."""
    rng = np.random.default_rng(11)
    centres = np.array([[0, 0, 0], [8, 8, 0], [-8, 4, 4], [4, -8, -4]], dtype=np.float64)
    labels = rng.integers(0, 4, 900)
    return (centres[labels] + rng.normal(0, 1.0, (900, 3))).astype(np.float32)
