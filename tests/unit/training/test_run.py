from __future__ import annotations

import json
from pathlib import Path

import pytest

from smserve.config import DEFAULT_TRAINING_BASE_DIR as DEFAULT_BASE_DIR
from smserve.config import TrainingSettings
from smserve.training import run
from smserve.training.paths import TrainingPaths

from .training_data import TrainingJob, blobs, to_csv


def csv_job(job: TrainingJob, **hyperparameters: str) -> TrainingJob:
    features, labels = blobs(30, 2)
    return job.hyperparameters(**hyperparameters).channel(
        "train", {"a.csv": to_csv(features, labels)}, "text/csv"
    )


def test_success_exits_zero_and_clears_an_old_failure_file(job: TrainingJob) -> None:
    csv_job(job, num_round="2")
    job.failure_file.parent.mkdir(parents=True)
    job.failure_file.write_text("from an earlier run")
    assert job.run() == 0
    assert not job.failure_file.exists()
    assert (job.model_dir / "xgboost-model").is_file()


def test_algorithm_defaults_to_xgboost_and_env_selects_kmeans(job: TrainingJob) -> None:
    csv_job(job, k="2", feature_dim="2")
    assert job.run() == 1
    assert "hyperparameter num_round is required" in job.failure  # XGBoost's
    assert job.run(SMSERVE_ALGORITHM="KMeans") == 0
    assert (job.model_dir / "model_algo-1").is_file()


@pytest.mark.parametrize(
    ("environ", "hyperparameters", "message"),
    [
        ({"SMSERVE_ALGORITHM": "forest"}, {}, "SMSERVE_ALGORITHM='forest' must be one of"),
        ({}, {"algorithm": "forest"}, "hyperparameter algorithm='forest' must be one of"),
        ({"SMSERVE_ALGORITHM": "xgboost"}, {"algorithm": "kmeans"}, "contradicts"),
    ],
    ids=["unknown", "unknown-hyperparameter", "contradiction"],
)
def test_algorithm_choice_errors(
    job: TrainingJob, environ: dict[str, str], hyperparameters: dict[str, str], message: str
) -> None:
    csv_job(job, **hyperparameters)
    assert job.run(**environ) == 1
    assert message in job.failure


def test_missing_train_channel_fails(job: TrainingJob) -> None:
    features, labels = blobs(10, 2)
    job.hyperparameters(num_round="2")
    job.channel("validation", {"a.csv": to_csv(features, labels)}, "text/csv")
    assert job.run() == 1
    assert "the 'train' channel is required" in job.failure


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"train": {"TrainingInputMode": "Pipe"}}, "TrainingInputMode 'Pipe' is not supported"),
        ({"train": {"ContentType": "not a type"}}, "channel 'train': Content-Type"),
        ({"train": {"ContentType": "image/png"}}, "'image/png' is not supported for training"),
        (["train"], "must map each channel name to an object"),
    ],
    ids=["pipe", "malformed-type", "unsupported-type", "not-an-object"],
)
def test_bad_input_data_config_fails(job: TrainingJob, config: object, message: str) -> None:
    csv_job(job, num_round="2")
    (job.base / "input/config/inputdataconfig.json").write_text(json.dumps(config))
    assert job.run() == 1
    assert message in job.failure


def test_without_inputdataconfig_the_folders_are_the_channels(job: TrainingJob) -> None:
    csv_job(job, num_round="2")
    (job.base / "input/config/inputdataconfig.json").unlink()
    (job.base / "input/data/train/a.csv").rename(job.base / "input/data/train/a.libsvm")
    (job.base / "input/data/train/a.libsvm").write_text("1 0:1 1:2\n0 0:2 1:1\n")
    assert job.run() == 0  # the XGBoost default content type, libsvm


def test_unused_channels_are_ignored(job: TrainingJob, capsys: pytest.CaptureFixture[str]) -> None:
    csv_job(job, num_round="1").channel("extra", {"x": "1"}, "text/csv")
    assert job.run() == 0
    assert "channel 'extra' is not used" in capsys.readouterr().out


def test_unreadable_hyperparameters_fail(job: TrainingJob) -> None:
    csv_job(job)
    (job.base / "input/config/hyperparameters.json").write_text("{")
    assert job.run() == 1
    assert "hyperparameters.json is not a readable JSON file" in job.failure


def test_unexpected_errors_exit_two_with_a_traceback(job: TrainingJob) -> None:
    csv_job(job, num_round="1")
    job.model_dir.parent.mkdir(parents=True, exist_ok=True)
    job.model_dir.write_text("a file where the model folder should be")
    assert job.run() == 2
    assert job.failure.startswith("Unexpected error during training: ")
    assert "Traceback (most recent call last)" in job.failure


def test_environment_overrides_each_path(tmp_path: Path) -> None:
    job = csv_job(TrainingJob(tmp_path / "layout"), num_round="1")
    environ = {
        "SM_INPUT_CONFIG_DIR": str(job.base / "input/config"),
        "SM_CHANNEL_TRAIN": str(job.base / "input/data/train"),
        "SM_MODEL_DIR": str(tmp_path / "model"),
        "SM_OUTPUT_DIR": str(tmp_path / "output"),
        "SMSERVE_TRAINING_BASE_DIR": str(tmp_path / "elsewhere"),
    }
    assert run(environ) == 0
    assert (tmp_path / "model" / "xgboost-model").is_file()
    environ["SM_CHANNEL_TRAIN"] = str(tmp_path / "absent")
    assert run(environ) == 1
    assert "absent does not exist" in (tmp_path / "output" / "failure").read_text()


def test_default_layout_is_opt_ml() -> None:
    paths = TrainingPaths.from_settings(TrainingSettings.from_env({}))
    assert paths.hyperparameters_file == DEFAULT_BASE_DIR / "input/config/hyperparameters.json"
    assert paths.channel_dir("train") == DEFAULT_BASE_DIR / "input/data/train"
    assert paths.model_dir == DEFAULT_BASE_DIR / "model"
    assert paths.failure_file == DEFAULT_BASE_DIR / "output/failure"


def test_libsvm_index_base_matches_the_serving_setting(job: TrainingJob) -> None:
    job.hyperparameters(algorithm="kmeans", k="1", feature_dim="2")
    job.channel("train", {"a": "0 1:1 2:3\n1 1:2 2:4\n"}, "text/libsvm")
    assert job.run() == 1  # as they are, index 2 is a third column
    assert "has 3 features, expected 2" in job.failure
    assert job.run(SMSERVE_LIBSVM_INDEX_BASE="1") == 0
    assert job.run(SMSERVE_LIBSVM_INDEX_BASE="2") == 1
    assert "SMSERVE_LIBSVM_INDEX_BASE='2' must be one of" in job.failure
