"""The SageMaker SDK's local mode against the built image (run by local_test/container_test.sh).

These tests need a container engine, Docker Compose and the image, so the plain ``pytest`` run
deselects them (it says how many); local_test/container_test.sh builds the image, sets
SMSERVE_LOCAL_MODE_IMAGE and runs ``pytest tests/local_mode``, where a missing engine or
compose is a failure, never a skip. See docs/hosting.md on the SDK's local mode.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

IMAGE_VARIABLE = "SMSERVE_LOCAL_MODE_IMAGE"
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(IMAGE_VARIABLE):
        return
    mine = [item for item in items if HERE in item.path.parents]
    if mine:
        config.hook.pytest_deselected(items=mine)
        items[:] = [item for item in items if HERE not in item.path.parents]


@pytest.fixture(scope="session")
def image() -> str:
    """The image under test, as local_test/container_test.sh built it."""
    return os.environ[IMAGE_VARIABLE]
