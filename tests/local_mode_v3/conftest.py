"""The SageMaker Python SDK v3 against the built image (run by local_test/sdk_v3_test.sh from
local_test/container_test.sh, with ``.venv-sdk3``'s pytest). Without SMSERVE_LOCAL_MODE_IMAGE
(a plain ``pytest``) these tests are deselected, as tests/local_mode's are."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_mode_v3 import v3_local

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
    return os.environ[IMAGE_VARIABLE]


@pytest.fixture(autouse=True)
def offline(tmp_path: Path) -> Iterator[None]:
    with v3_local.offline_sdk(tmp_path):
        yield
