"""The multi-model registry: the model-name rule, and the memory budget checked before
anything is loaded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms import catalog
from smserve.algorithms.base import Algorithm
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.config import Settings
from smserve.errors import InsufficientStorage, InvalidInput
from smserve.repository.loading import ModelLoader
from smserve.repository.mme import MAX_NAME_LENGTH, MultiModelRegistry, check_name
from tests.tfserving.fakes import FakeXGBoost


class CountingLoader:
    """Loads a fake model, counting the loads."""

    def __init__(self) -> None:
        self.loads: list[Path] = []

    def __call__(self, path: Path, platform: str | None) -> Algorithm:
        self.loads.append(path)
        return FakeXGBoost(n=4)  # type: ignore[return-value]


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    for name, k in (("small", 4), ("large", 4000)):
        (tmp_path / "models" / name).mkdir(parents=True)
        centroids = np.zeros((k, 4), np.float32)
        write_ndarray_file(tmp_path / "models" / name / "model_algo-1", centroids)
    return tmp_path / "models"


def registry(
    tmp_path: Path, models_dir: Path, budget: int | None
) -> tuple[MultiModelRegistry, CountingLoader]:
    settings = Settings(multi_model=True, models_dir=models_dir, memory_budget_bytes=budget)
    loader = CountingLoader()
    return MultiModelRegistry(ModelLoader(settings, loader), tmp_path / "state"), loader


def test_a_load_past_the_budget_is_refused_before_loading(tmp_path: Path, models_dir: Path) -> None:
    small = catalog.estimate(Settings(), models_dir / "small")
    large = catalog.estimate(Settings(), models_dir / "large")
    assert large.peak > small.peak
    models, loader = registry(tmp_path, models_dir, budget=small.resident + large.peak - 1)
    models.load("small", "small")
    with pytest.raises(InsufficientStorage, match=r"~\d+\.\d MiB while loading.*unload a model"):
        models.load("large", "large")
    assert [p.name for p in loader.loads] == ["small"]  # nothing was loaded for "large"
    assert models.names() == ("small",)
    models.unload("small")
    models.load("large", "large")
    assert models.entry("large").size_bytes == large.resident  # recorded: what it keeps


def test_the_budget_counts_what_loaded_models_keep_not_their_peak(
    tmp_path: Path, models_dir: Path
) -> None:
    small = catalog.estimate(Settings(), models_dir / "small")
    models, _ = registry(tmp_path, models_dir, budget=small.resident + small.peak)
    models.load("a", "small")
    models.load("b", "small")
    with pytest.raises(InsufficientStorage):
        models.load("c", "small")


def test_without_a_budget_every_load_proceeds(tmp_path: Path, models_dir: Path) -> None:
    models, loader = registry(tmp_path, models_dir, budget=None)
    for name in ("a", "b", "c"):
        models.load(name, "large")
    assert len(loader.loads) == 3


@pytest.mark.parametrize("name", ["m", "model.tar.gz", "a" * MAX_NAME_LENGTH, "é ü", "x.y-z_1"])
def test_safe_names(name: str) -> None:
    check_name(name)


@pytest.mark.parametrize(
    ("name", "broken"),
    [
        ("", "must be 1 to 1024 characters long"),
        ("a" * (MAX_NAME_LENGTH + 1), "must be 1 to 1024 characters long"),
        ("a\nb", "control, format or line-break"),
        ("a\x00b", "control, format or line-break"),
        ("\u200bzero-width", "control, format or line-break"),
        ("..", "may not contain '/', '\\' or '..', nor be '.'"),
        ("../x", "may not contain"),
        ("x/y", "may not contain"),
        ("x\\y", "may not contain"),
        ("a..b", "may not contain"),
        (".", "nor be '.'"),
    ],
)
def test_unsafe_names_name_the_rule(name: str, broken: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        check_name(name)
    assert broken in raised.value.message
    assert raised.value.message.endswith("printable characters without '/', '\\' or '..'")
    assert len(raised.value.message) < 300  # a long name is quoted as an excerpt
