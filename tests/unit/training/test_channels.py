"""A channel that is one file rather than a folder (how the SageMaker SDK v3's ModelTrainer
mounts a single-file channel): read as a one-file channel, with inputdataconfig.json and
without; a channel that is neither says what a channel may be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smserve.media import MediaType
from smserve.training.channels import Channel
from smserve.training.failure import TrainingError

from .training_data import TrainingJob, blobs, to_csv, to_libsvm


def test_a_file_is_a_one_file_channel(tmp_path: Path) -> None:
    path = tmp_path / "train"
    path.write_text("1,2\n", encoding="utf-8")
    assert Channel("train", path, MediaType("text/csv")).files() == [path]


@pytest.mark.parametrize("config", [True, False], ids=["inputdataconfig", "folders-only"])
def test_training_reads_a_channel_mounted_as_a_file(job: TrainingJob, config: bool) -> None:
    features, labels = blobs(30, 2)
    job.hyperparameters(num_round="2")
    train = job.base / "input/data/train"
    train.parent.mkdir(parents=True)
    if config:
        train.write_text(to_csv(features, labels), encoding="utf-8")
        entry = {"train": {"TrainingInputMode": "File", "ContentType": "text/csv"}}
        (job.base / "input/config/inputdataconfig.json").write_text(json.dumps(entry))
    else:  # the data folder's entries are the channels; XGBoost's default type, libsvm
        train.write_text(to_libsvm(features, labels), encoding="utf-8")
    assert job.run() == 0, job.failure
    assert (job.model_dir / "xgboost-model").is_file()


def test_a_missing_channel_says_what_a_channel_may_be(tmp_path: Path) -> None:
    with pytest.raises(TrainingError, match="a folder of data files, or one data file"):
        Channel("train", tmp_path / "absent", MediaType("text/csv")).files()
