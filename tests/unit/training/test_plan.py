"""Each host's share of the rows, and the census every host takes part in."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from smserve.training.collective import LOCAL
from smserve.training.multihost import FAILED, Report, census
from smserve.training.plan import Share, has_data, read_sharded


def test_replicated_rows_are_split_by_host_index_into_the_union_once() -> None:
    parts = [Share(i, 3).rows("train", 10) for i in range(3)]
    assert parts == [slice(0, 3), slice(3, 6), slice(6, 10)]
    assert Share(1, 3, frozenset({"train"})).rows("train", 10) == slice(0, 10)
    assert Share().rows("train", 10) == slice(0, 10)


def test_sharded_channels_are_read_from_the_input_data_config(tmp_path: Path) -> None:
    path = tmp_path / "inputdataconfig.json"
    config = {
        "train": {"S3DistributionType": "ShardedByS3Key"},
        "validation": {"S3DistributionType": "FullyReplicated"},
    }
    path.write_text(json.dumps(config))
    assert read_sharded(path) == {"train"}
    assert read_sharded(tmp_path / "missing.json") == frozenset()


def test_a_folder_of_empty_or_hidden_files_has_no_data(tmp_path: Path) -> None:
    assert not has_data(tmp_path / "absent")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / ".hidden").write_text("1,2")
    assert not has_data(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.csv").write_text("1,2")
    assert has_data(tmp_path)


def test_a_census_report_survives_the_allreduce_encoding() -> None:
    message = "channel 'train': a.csv is not numeric CSV: ünïcode " + "x" * 2000
    (report,) = census(LOCAL, Report(FAILED, message))
    assert report.status == FAILED
    assert message.startswith(report.message)
    assert len(report.message.encode()) <= 1024


def test_the_local_group_is_the_identity() -> None:
    values = np.arange(6.0).reshape(2, 3)
    assert LOCAL.allreduce_sum(values) is values
    assert LOCAL.broadcast(values) is values
