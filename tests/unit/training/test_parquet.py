"""Parquet training channels for XGBoost and k-means: pandas/pyarrow-written files, the label
in the first column or named by ``label_column``, nulls, bad files; k-means reads the channel
one row group at a time and gives the centres an in-memory read of the same rows gives."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xgboost as xgb

from bench.hostile import hostile_bodies
from smserve.algorithms.ndarray import read_ndarray_file
from smserve.media import PARQUET, MediaType
from smserve.training import kmeans
from smserve.training.channels import Channel
from smserve.training.collective import LOCAL
from smserve.training.data import read_channel
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.kmeans_config import KMeansConfig
from smserve.training.kmeans_fit import fit
from smserve.training.kmeans_rows import Rows
from smserve.training.parquet import row_groups

from .training_data import TrainingJob, blobs


def parquet(frame: pd.DataFrame, row_group_size: int | None = None) -> bytes:
    sink = io.BytesIO()
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False), sink, row_group_size=row_group_size
    )
    return sink.getvalue()


def frame_of(features: np.ndarray, labels: np.ndarray, label_first: bool = True) -> pd.DataFrame:
    frame = pd.DataFrame(features, columns=[f"x{i}" for i in range(features.shape[1])])
    if label_first:
        return frame.assign(y=labels)[["y", *frame.columns]]
    return frame.assign(target=labels)


def test_xgboost_trains_on_parquet_like_on_csv(job: TrainingJob) -> None:
    features, labels = blobs(90, 3)
    job.hyperparameters(num_round="3", objective="multi:softmax", num_class="3")
    body = parquet(frame_of(features, labels), row_group_size=20)
    job.channel("train", {"part-0.parquet": body}, PARQUET)
    assert job.run() == 0
    booster = xgb.Booster()
    booster.load_model(bytearray((job.model_dir / "xgboost-model").read_bytes()))
    predicted = booster.predict(xgb.DMatrix(features))
    assert (predicted == labels).mean() > 0.95


def test_label_column_hyperparameter_names_the_label(tmp_path: Path) -> None:
    features, labels = blobs(12, 2)
    path = tmp_path / "train" / "a.parquet"
    path.parent.mkdir()
    path.write_bytes(parquet(frame_of(features, labels, label_first=False)))
    dataset = read_channel(Channel("train", path.parent, MediaType(PARQUET), label_column="target"))
    np.testing.assert_array_equal(dataset.features, features.astype(np.float32))
    np.testing.assert_array_equal(dataset.labels, labels.astype(np.float32))


def test_nulls_are_missing_values_and_types_convert(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"y": [1, 0, 1], "a": pd.array([1, None, 3], dtype="Int32"), "b": [True, False, True]}
    )
    (tmp_path / "a.parquet").write_bytes(parquet(frame))
    dataset = read_channel(Channel("train", tmp_path, MediaType(PARQUET)))
    np.testing.assert_array_equal(dataset.features, [[1, 1], [np.nan, 0], [3, 1]])
    np.testing.assert_array_equal(dataset.labels, [1, 0, 1])


@pytest.mark.parametrize(
    ("content", "hyperparameters", "message"),
    [
        (b"PAR1 not really", {}, "is not a readable Parquet file"),
        (None, {"label_column": "nope"}, "label_column='nope' is not a column"),
        ("strings", {}, "column 'x0' holds large_string values"),
    ],
    ids=["corrupt", "unknown-label", "string-column"],
)
def test_bad_files_fail_naming_the_problem(
    job: TrainingJob, content: bytes | str | None, hyperparameters: dict[str, str], message: str
) -> None:
    features, labels = blobs(20, 2)
    if content is None:
        content = parquet(frame_of(features, labels))
    elif content == "strings":
        content = parquet(frame_of(features, labels).assign(x0="a"))
    job.hyperparameters(num_round="2", **hyperparameters)
    job.channel("train", {"a.parquet": content}, PARQUET)
    assert job.run() == 1
    assert message in job.failure


DAMAGED = {
    "row-group-lies": (
        lambda: hostile_bodies.parquet_rows_lie(1000),
        {"xgboost": "row group 1 declares 1000 rows but holds 1"},
    ),
    "footer-declares-1e12-rows": (
        lambda: hostile_bodies.parquet_rows_lie(10**12),
        {
            "xgboost": "1000000000000 rows of 50 columns need 200000000000000 bytes as float32",
            "kmeans": "row group 1 declares 1000000000000 rows but holds 1",
        },
    ),
    "footer-disagrees-with-row-groups": (
        lambda: hostile_bodies.parquet_footer_disagrees(5),
        {"xgboost": "the footer declares 5 rows but its row groups 1"},
    ),
}


@pytest.mark.parametrize("algorithm", ["xgboost", "kmeans"])
@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_file_whose_counts_lie_is_refused_naming_it(
    job: TrainingJob, algorithm: str, case: str
) -> None:
    """Row counts from the footer size the reads; a file whose counts are not its rows is a
    failed job naming the file (exit 1), never a crash or an allocation of what it declares.
    The files: one real row of 50 columns (hand-written metadata, bench/hostile)."""
    body, messages = DAMAGED[case]
    hyperparameters = (
        {"num_round": "1"} if algorithm == "xgboost" else {"k": "1", "feature_dim": "49"}
    )
    job.hyperparameters(algorithm=algorithm, **hyperparameters)
    job.channel("train", {"lie.parquet": body()}, PARQUET)
    assert job.run() == 1
    assert "lie.parquet" in job.failure
    assert messages.get(algorithm, messages["xgboost"]) in job.failure


def test_kmeans_streams_row_groups_to_the_same_centres(tmp_path: Path) -> None:
    features, labels = blobs(300, 3)
    channel_dir = tmp_path / "train"
    channel_dir.mkdir()
    for part in range(3):  # three files of five row groups each
        rows = slice(100 * part, 100 * (part + 1))
        body = parquet(frame_of(features[rows], labels[rows]), row_group_size=20)
        (channel_dir / f"part-{part}.parquet").write_bytes(body)
    channel = Channel("train", channel_dir, MediaType(PARQUET))
    groups = [len(f) for path in channel.files() for f, _ in row_groups(path, None)]
    assert groups == [20] * 15
    config = KMeansConfig(k=3, feature_dim=3, mini_batch_size=40, epochs=2)
    streamed = fit(config, {"train": Rows.streamed(channel, lambda f, _: f)}, LOCAL)
    in_memory = fit(config, {"train": Rows.in_memory(read_channel(channel))}, LOCAL)
    assert sorted(np.round(streamed[:, 0] / 10).astype(int).tolist()) == [-1, 0, 1]
    np.testing.assert_allclose(np.sort(streamed[:, 0]), np.sort(in_memory[:, 0]), atol=0.5)


def test_kmeans_job_on_parquet(job: TrainingJob) -> None:
    features, labels = blobs(90, 4)
    job.hyperparameters(algorithm="kmeans", k="3", feature_dim="4", mini_batch_size="30")
    job.channel("train", {"a.parquet": parquet(frame_of(features, labels), 25)}, PARQUET)
    assert job.run() == 0
    centers = read_ndarray_file(job.model_dir / "model_algo-1")
    assert sorted(np.round(centers[:, 0] / 10).astype(int).tolist()) == [-1, 0, 1]


def test_kmeans_refuses_nulls_in_a_row_group(job: TrainingJob) -> None:
    features, labels = blobs(40, 2)
    frame = frame_of(features, labels)
    frame.loc[33, "x1"] = np.nan
    job.hyperparameters(algorithm="kmeans", k="2", feature_dim="2")
    job.channel("train", {"a.parquet": parquet(frame, 10)}, PARQUET)
    assert job.run() == 1
    assert "'train' (a.parquet) has missing or infinite feature values" in job.failure


@pytest.mark.parametrize(("share", "from_files"), [(0.25, False), (0.0, True)])
def test_kmeans_holds_a_parquet_channel_in_memory_only_where_it_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: float, from_files: bool
) -> None:
    features, labels = blobs(90, 3)
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "a.parquet").write_bytes(parquet(frame_of(features, labels), 20))
    monkeypatch.setattr(kmeans, "IN_MEMORY_SHARE", share)
    hyperparameters = Hyperparameters({"k": "3", "feature_dim": "3", "mini_batch_size": "30"})
    channels = {"train": Channel("train", tmp_path / "train", MediaType(PARQUET))}
    job = kmeans.KMeansTrainer().prepare(hyperparameters, channels)
    assert job.data["train"].from_files is from_files
    assert job.train_rows == 90
    centers = fit(job.config, job.data, LOCAL)
    assert sorted(np.round(centers[:, 0] / 10).astype(int).tolist()) == [-1, 0, 1]
