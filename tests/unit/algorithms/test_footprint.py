"""The memory a model will cost, estimated from its files before any is parsed."""

from __future__ import annotations

import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms import footprint
from smserve.algorithms.catalog import estimate
from smserve.algorithms.footprint import (
    KMEANS,
    PER_MODEL,
    SKOPS_LIBRARIES,
    XGBOOST_BINARY,
    XGBOOST_JSON,
    Footprint,
)
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.config import Settings

ONE_THREAD = Settings(cpu_count=2, workers=2)


@pytest.fixture
def booster(train: Callable[..., xgb.Booster]) -> xgb.Booster:
    return train("reg:squarederror", rounds=20, max_depth=4)


def write(model_dir: Path, booster: xgb.Booster, fmt: str, name: str = "xgboost-model") -> int:
    model_dir.mkdir(exist_ok=True)
    data = bytes(booster.save_raw(fmt))
    (model_dir / name).write_bytes(data)
    return len(data)


@pytest.mark.parametrize(("fmt", "rate"), [("json", XGBOOST_JSON), ("ubj", XGBOOST_BINARY)])
def test_an_xgboost_file_costs_its_formats_rate(
    tmp_path: Path, booster: xgb.Booster, fmt: str, rate: footprint.Rate
) -> None:
    size = write(tmp_path / "m", booster, fmt)
    assert estimate(ONE_THREAD, tmp_path / "m") == PER_MODEL + rate.of(size)


def test_a_worker_with_several_threads_keeps_a_second_copy(
    tmp_path: Path, booster: xgb.Booster
) -> None:
    size = write(tmp_path / "m", booster, "ubj")
    two_threads = estimate(Settings(cpu_count=4, workers=2), tmp_path / "m")
    assert two_threads == PER_MODEL + XGBOOST_BINARY.of(size, copies=2)


def test_an_ensemble_costs_each_member_unless_off(tmp_path: Path, booster: xgb.Booster) -> None:
    sizes = [write(tmp_path / "m", booster, fmt, f"xgboost-model-{fmt}") for fmt in ("json", "ubj")]
    both = PER_MODEL + XGBOOST_JSON.of(sizes[0]) + XGBOOST_BINARY.of(sizes[1])
    assert estimate(ONE_THREAD, tmp_path / "m") == both
    first = PER_MODEL + XGBOOST_JSON.of(sizes[0])
    assert estimate(ONE_THREAD.replace(ensemble=False), tmp_path / "m") == first


def test_an_archive_is_estimated_from_its_members(tmp_path: Path, booster: xgb.Booster) -> None:
    size = write(tmp_path / "files", booster, "json")
    (tmp_path / "m").mkdir()
    with tarfile.open(tmp_path / "m" / "model.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "files", arcname="model")  # a wrapper folder, as some tools pack
    assert estimate(ONE_THREAD, tmp_path / "m") == PER_MODEL + XGBOOST_JSON.of(size)


def test_kmeans_costs_its_centroids(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    write_ndarray_file(tmp_path / "m" / "model_algo-1", np.zeros((100, 50), np.float32))
    (tmp_path / "m" / "notes.txt").write_text("not read")
    size = (tmp_path / "m" / "model_algo-1").stat().st_size
    assert estimate(Settings(), tmp_path / "m") == PER_MODEL + KMEANS.of(size)


def test_the_first_skops_model_pays_for_scikit_learn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "kmeans.skops").write_bytes(b"x" * 1000)
    plain = PER_MODEL + KMEANS.of(1000)
    monkeypatch.setitem(sys.modules, "sklearn", sys.modules.get("sklearn") or object())
    assert estimate(Settings(), tmp_path / "m") == plain
    monkeypatch.delitem(sys.modules, "sklearn")
    assert estimate(Settings(), tmp_path / "m") == plain + SKOPS_LIBRARIES


def test_rates_add_the_parsing_peak_to_what_is_kept() -> None:
    assert footprint.Rate(resident=2.0, peak=5.0).of(100, copies=2) == Footprint(400, 700)
