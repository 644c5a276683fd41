"""The SageMaker Python SDK v3 against the built image (run by local_test/sdk_v3_test.sh from
local_test/container_test.sh, with ``.venv-sdk3``'s pytest). They need SDK v3, which cannot
share an environment with v2: where the installed ``sagemaker`` is 2.x (``.venv``) their
modules are not collected at all; without SMSERVE_LOCAL_MODE_IMAGE (a plain ``pytest``)
they are deselected, as tests/local_mode's are."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_mode_v3 import v3_local

IMAGE_VARIABLE = "SMSERVE_LOCAL_MODE_IMAGE"
HERE = Path(__file__).resolve().parent


def _has_sdk_v3() -> bool:
    """From the installed distribution's version: importing v2's ``sagemaker`` warns."""
    try:
        return int(importlib.metadata.version("sagemaker").split(".")[0]) >= 3
    except importlib.metadata.PackageNotFoundError:
        return False


collect_ignore_glob = [] if _has_sdk_v3() else ["test_*.py"]


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
