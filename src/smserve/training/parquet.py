"""Parquet training channels (``application/x-parquet``, as the built-in XGBoost takes them):
each file's columns are features, and the label is the first column unless the job's
``label_column`` hyperparameter names another (``Channel.label_column``).

Files are read one row group at a time: ``row_groups`` yields them in order, so k-means,
streaming a channel too large for memory, holds one row group (and one mini-batch) at a time;
``read_parquet_file`` copies a file's row groups into arrays sized from its footer for
XGBoost, which needs all rows at once. The footer's counts are checked against the row
groups' and each row group's against what it holds: a file that declares rows it does not
hold is a TrainingError naming it. Feature columns are converted as for serving
(``codecs/columnar.py``): numeric types to float32, nulls as missing values; other column
types are a TrainingError naming the column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from smserve import media
from smserve.codecs.base import DecodeContext
from smserve.codecs.columnar import batch_from_table
from smserve.errors import ClientError
from smserve.resources import detect
from smserve.training.channels import Channel
from smserve.training.failure import TrainingError
from smserve.training.hyperparameters import Hyperparameters
from smserve.types import FloatArray

LABEL_COLUMN = "label_column"  # the hyperparameter that names the label column


def row_groups(path: Path, label_column: str | None) -> Iterator[tuple[FloatArray, FloatArray]]:
    """(features, labels) of each non-empty row group of the file at ``path``, in order."""
    file = _open(path)
    return _groups(file, path, _label_name(file.schema_arrow.names, label_column, path))


def read_parquet_file(path: Path, label_column: str | None) -> tuple[FloatArray, FloatArray]:
    """(features, labels) of every row of the file; empty files give zero rows. The arrays
    are sized from the footer (checked against memory first) and each row group is copied in
    as it is read: the rows are held once, not as row groups and again joined."""
    file = _open(path)
    names = file.schema_arrow.names
    label = _label_name(names, label_column, path)  # at least two columns
    rows = file.metadata.num_rows
    _check_fits(path, rows, len(names))
    features, labels = np.empty((rows, len(names) - 1), np.float32), np.empty(rows, np.float32)
    at = 0
    for group_features, group_labels in _groups(file, path, label):
        end = at + group_labels.shape[0]
        features[at:end], labels[at:end] = group_features, group_labels
        at = end
    return features, labels


def count_rows(channel: Channel) -> int:
    """Rows in the channel's files, from their footers alone."""
    return sum(_open(path).metadata.num_rows for path in channel.files())


def _groups(
    file: pq.ParquetFile, path: Path, label: str
) -> Iterator[tuple[FloatArray, FloatArray]]:
    for index in range(file.num_row_groups):
        if file.metadata.row_group(index).num_rows:  # what _read_group finds, or it refuses
            yield _split(_read_group(file, index, path), label, path)
    pa.default_memory_pool().release_unused()  # Arrow's pool keeps what the groups freed


def _open(path: Path) -> pq.ParquetFile:
    """The file, its footer read; refused where the rows it declares are not its row
    groups' (the counts size what reads it)."""
    try:
        file = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise TrainingError(f"{path} is not a readable Parquet file: {exc}") from None
    metadata = file.metadata
    in_groups = sum(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))
    if in_groups != metadata.num_rows:
        raise TrainingError(
            f"{path}: the footer declares {metadata.num_rows} rows but its row groups "
            f"{in_groups}; the file is damaged"
        )
    return file


def _check_fits(path: Path, rows: int, columns: int) -> None:
    needed = rows * columns * np.dtype(np.float32).itemsize
    memory = detect().memory_bytes
    if needed > memory:
        raise TrainingError(
            f"{path}: {rows} rows of {columns} columns need {needed} bytes as float32, more "
            f"than the {memory} bytes of memory here; split the data into more files across "
            "more instances, or use a larger instance"
        )


def _read_group(file: pq.ParquetFile, index: int, path: Path) -> pa.Table:
    try:
        table = file.read_row_group(index)
    except (pa.ArrowException, OSError) as exc:
        raise TrainingError(f"{path}: row group {index + 1} cannot be read: {exc}") from None
    declared = file.metadata.row_group(index).num_rows
    if table.num_rows != declared:
        raise TrainingError(
            f"{path}: row group {index + 1} declares {declared} rows but holds "
            f"{table.num_rows}; the file is damaged"
        )
    return table


def _label_name(names: list[str], label_column: str | None, path: Path) -> str:
    if label_column is None:
        if len(names) < 2:
            raise TrainingError(f"{path}: needs a label column and at least one feature column")
        return str(names[0])
    if label_column not in names:
        raise TrainingError(
            f"{path}: {LABEL_COLUMN}={label_column!r} is not a column; "
            f"columns: {', '.join(names[:10])}"
        )
    return label_column


def _split(table: pa.Table, label: str, path: Path) -> tuple[FloatArray, FloatArray]:
    features = table.drop_columns([label])
    try:
        rows = batch_from_table(features, media.PARQUET, DecodeContext()).features
        labels = batch_from_table(table.select([label]), media.PARQUET, DecodeContext()).features
    except ClientError as exc:
        raise TrainingError(f"{path}: {exc.message}") from None
    return np.asarray(rows), np.asarray(labels).reshape(-1)


def with_label_column(channels: Mapping[str, Channel], hp: Hyperparameters) -> dict[str, Channel]:
    """``channels`` with the ``label_column`` hyperparameter applied (it marks it used)."""
    label = hp.text(LABEL_COLUMN)
    return {name: replace(channel, label_column=label) for name, channel in channels.items()}
