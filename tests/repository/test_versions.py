"""Version discovery, policies, labels, failed loads and hot swaps under load."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from smserve.errors import ModelNotFound, UnknownLabel
from smserve.repository.config import ModelConfig, VersionPolicy
from smserve.repository.loading import ModelLoader
from smserve.repository.model import ModelVersions
from smserve.repository.repository import Repository
from smserve.repository.status import State, VersionStatus
from smserve.tfserving.api import TFServingAPI
from smserve.types import Batch
from tests.repository.conftest import write_version
from tests.tfserving.fakes import BODY_LIMIT, handle


def answer(model: ModelVersions, version: int | None = None, label: str | None = None) -> float:
    served = model.served(version, label)
    prediction = served.algorithm.predict(Batch(np.zeros((1, 2), dtype=np.float32)))
    return float(prediction.outputs["score"][0])


def test_numeric_directories_are_versions(tmp_path: Path, loader: ModelLoader) -> None:
    for version in (1, 3, 20):
        write_version(tmp_path, version, version)
    (tmp_path / "notes").mkdir()
    (tmp_path / "7").write_text("a file, not a version")
    model = ModelVersions(ModelConfig("m", tmp_path, policy=VersionPolicy("all")), loader)
    model.refresh()
    assert sorted(model.available) == [1, 3, 20]
    assert answer(model) == 20.0
    assert answer(model, 3) == 3.0


def test_latest_policy_serves_the_newest(tmp_path: Path, loader: ModelLoader) -> None:
    for version in (1, 2):
        write_version(tmp_path, version, version)
    model = ModelVersions(ModelConfig("m", tmp_path), loader)
    model.refresh()
    assert list(model.available) == [2]
    assert model.statuses(None, None) == [VersionStatus(2, State.AVAILABLE)]
    with pytest.raises(ModelNotFound) as missing:
        model.served(1, None)
    assert _fields(missing.value) == ("m", 1, False)


def test_a_new_version_replaces_the_old_and_the_old_ends(
    tmp_path: Path, loader: ModelLoader
) -> None:
    write_version(tmp_path, 1, 1)
    model = ModelVersions(ModelConfig("m", tmp_path), loader)
    model.refresh()
    write_version(tmp_path, 2, 2)
    model.refresh()
    assert list(model.available) == [2]
    assert {s.version: s.state for s in model.statuses(None, None)} == {
        1: State.END,
        2: State.AVAILABLE,
    }


def test_a_failed_version_is_end_with_its_error_and_the_old_keeps_serving(
    tmp_path: Path, loader: ModelLoader
) -> None:
    write_version(tmp_path, 1, 1)
    model = ModelVersions(ModelConfig("m", tmp_path), loader)
    model.refresh()
    write_version(tmp_path, 2, "garbage")
    model.refresh()
    assert answer(model) == 1.0
    (failed,) = model.statuses(2, None)
    assert (failed.state, failed.error_code) == (State.END, "INVALID_ARGUMENT")
    assert "not a number: 'garbage'" in failed.error_message
    # Fixed files are retried on the next pass.
    (tmp_path / "2" / "offset").write_text("2.5")
    model.refresh()
    assert answer(model) == 2.5
    assert model.statuses(2, None) == [VersionStatus(2, State.AVAILABLE)]


def test_failed_versions_are_not_reloaded_until_their_files_change(
    tmp_path: Path, loader: ModelLoader
) -> None:
    calls: list[Path] = []

    def counting(path: Path, platform: str | None) -> object:
        calls.append(path)
        return loader._load(path, platform)

    write_version(tmp_path, 1, "bad")
    model = ModelVersions(ModelConfig("m", tmp_path), ModelLoader(loader.settings, counting))  # type: ignore[arg-type]
    for _ in range(3):
        model.refresh()
    assert len(calls) == 1
    with pytest.raises(ModelNotFound) as missing:
        model.served(None, None)
    assert _fields(missing.value) == ("m", None, False)


def test_removed_versions_are_retired(tmp_path: Path, loader: ModelLoader) -> None:
    for version in (1, 2):
        write_version(tmp_path, version, version)
    model = ModelVersions(ModelConfig("m", tmp_path, policy=VersionPolicy("all")), loader)
    model.refresh()
    shutil.rmtree(tmp_path / "2")
    model.refresh()
    assert list(model.available) == [1]


def test_labels_point_only_at_available_versions(tmp_path: Path, loader: ModelLoader) -> None:
    write_version(tmp_path, 1, 1)
    config = ModelConfig(
        "m", tmp_path, policy=VersionPolicy("all"), labels={"stable": 1, "canary": 2}
    )
    model = ModelVersions(config, loader)
    model.refresh()
    assert answer(model, label="stable") == 1.0
    with pytest.raises(UnknownLabel) as unknown:
        model.served(None, "canary")
    assert (unknown.value.model_name, unknown.value.label, unknown.value.status) == (
        "m",
        "canary",
        400,
    )
    write_version(tmp_path, 2, 2)
    model.refresh()
    assert answer(model, label="canary") == 2.0
    assert model.statuses(None, "canary") == [VersionStatus(2, State.AVAILABLE)]


def test_status_errors(tmp_path: Path, loader: ModelLoader) -> None:
    repository = Repository.from_configs([ModelConfig("m", tmp_path / "empty")], loader)
    repository.refresh()
    with pytest.raises(ModelNotFound) as missing:
        repository.statuses("m", None, None)
    assert _fields(missing.value) == ("m", None, True)
    with pytest.raises(ModelNotFound) as missing:
        repository.statuses("x", None, None)
    assert _fields(missing.value) == ("x", None, True)
    write_version(tmp_path / "empty", 1, 1)
    repository.refresh()
    with pytest.raises(ModelNotFound) as missing:
        repository.statuses("m", 5, None)
    assert _fields(missing.value) == ("m", 5, False)


def test_the_sagemaker_directory_is_version_1(tmp_path: Path, loader: ModelLoader) -> None:
    (tmp_path / "offset").write_text("7")
    model = ModelVersions(ModelConfig("model", tmp_path, single_version=True), loader)
    model.refresh()
    assert list(model.available) == [1]
    assert answer(model) == 7.0


def test_hot_swap_under_load_fails_no_request(tmp_path: Path, loader: ModelLoader) -> None:
    """A thread predicts continuously through the API while the poller picks up version 2
    (and retires 1), then version 3. Every request must succeed, and answers only ever move
    forward in version."""
    write_version(tmp_path, 1, 1)
    repository = Repository.from_configs([ModelConfig("m", tmp_path)], loader)
    repository.refresh()
    api = TFServingAPI(repository, BODY_LIMIT)
    failures: list[bytes] = []
    seen: list[int] = []
    stop = threading.Event()

    def hammer() -> None:
        for _ in range(20_000):  # bounded, in case stop is never set
            if stop.is_set():
                return
            reply = handle(api, "POST", "/v1/models/m:predict", b'{"instances": [[0, 0]]}')
            if reply.status != 200:
                failures.append(reply.body)
            else:
                seen.append(int(reply.version or 0))

    repository.start_polling(0.02)
    worker = threading.Thread(target=hammer)
    worker.start()
    try:
        time.sleep(0.1)
        write_version(tmp_path, 2, 2)
        _wait_for(lambda: list(repository.models["m"].available) == [2])  # type: ignore[attr-defined]
        write_version(tmp_path, 3, 3)
        _wait_for(lambda: list(repository.models["m"].available) == [3])  # type: ignore[attr-defined]
        time.sleep(0.1)
    finally:
        stop.set()
        worker.join()
        repository.stop_polling()
    assert failures == []
    assert seen == sorted(seen)  # never an older version after a newer one
    assert (seen[0], seen[-1]) == (1, 3)


def _wait_for(condition: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _fields(error: ModelNotFound) -> tuple[str, int | None, bool]:
    """What a door words a lookup error from (the repository's errors are protocol-neutral)."""
    return error.model_name, error.version, error.whole_model
