"""Zero-byte and truncated model files: refused with a message naming the file, before a
loader (XGBoost in particular, which can crash the process on such input) parses them."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms.loading import load_algorithm
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.config import Settings
from smserve.errors import ModelLoadError
from smserve.http.process import call_in_child


def load(model_dir: Path) -> None:
    load_algorithm(Settings(model_dir=model_dir, xgboost_device="cpu"))


def model_bytes(name: str, booster: xgb.Booster, centroids: np.ndarray, tmp_path: Path) -> bytes:
    if name.endswith(".ubj"):
        return bytes(booster.save_raw("ubj"))
    if name == "xgboost-model":
        return bytes(booster.save_raw("json"))
    if name == "centroids.npy":
        buffer = io.BytesIO()
        np.save(buffer, centroids)
        return buffer.getvalue()
    write_ndarray_file(tmp_path / "ndarray", centroids)
    return (tmp_path / "ndarray").read_bytes()


@pytest.fixture
def booster(xgb_binary_dir: Path) -> xgb.Booster:
    booster = xgb.Booster()
    booster.load_model(bytearray((xgb_binary_dir / "xgboost-model").read_bytes()))
    return booster


NAMES = ["xgboost-model", "xgboost-model.ubj", "model_algo-1", "centroids.npy"]


@pytest.mark.parametrize("name", NAMES)
def test_a_zero_byte_model_file_is_named_as_empty(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(ModelLoadError, match=rf"{tmp_path / name} is empty \(0 bytes\)"):
        load(tmp_path)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fraction", [0.01, 0.5, 0.99])
def test_a_truncated_model_file_is_named_as_truncated(
    tmp_path: Path,
    booster: xgb.Booster,
    kmeans_centroids: np.ndarray,
    name: str,
    fraction: float,
) -> None:
    whole = model_bytes(name, booster, kmeans_centroids, tmp_path)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / name).write_bytes(whole[: max(1, int(len(whole) * fraction))])
    with pytest.raises(
        ModelLoadError, match=rf"{model_dir / name}:? (MXNet NDArray file )?is truncated"
    ):
        load(model_dir)


@pytest.mark.parametrize("name", NAMES)
def test_the_untruncated_files_load(
    tmp_path: Path, booster: xgb.Booster, kmeans_centroids: np.ndarray, name: str
) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / name).write_bytes(model_bytes(name, booster, kmeans_centroids, tmp_path))
    load(model_dir)


def test_every_cut_of_a_ubjson_model_is_refused_not_a_crash(
    tmp_path: Path, booster: xgb.Booster
) -> None:
    # Each cut loads in a forked child, as `serve` checks the model at start: a crash there
    # would surface as "check failed (exit status -11)" instead of a ModelLoadError.
    whole = bytes(booster.save_raw("ubj"))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for cut in range(0, len(whole), max(1, len(whole) // 40)):
        (model_dir / "xgboost-model").write_bytes(whole[:cut])
        with pytest.raises(ModelLoadError, match="xgboost-model is (empty|truncated)"):
            call_in_child(load, model_dir)


def test_startup_check_names_a_zero_byte_xgboost_model(tmp_path: Path) -> None:
    (tmp_path / "xgboost-model").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="xgboost-model is empty"):
        call_in_child(load, tmp_path)
