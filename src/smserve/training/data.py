"""Training data readers: a channel's files into features plus labels.

Unlike the inference decoders these keep the labels. ``text/csv`` has the label in the
first column unless the content type says ``label_size=0``; ``text/libsvm`` always starts a
line with its label (indices per ``SMSERVE_LIBSVM_INDEX_BASE``, default 0: as they are);
``application/x-recordio-protobuf`` labels come from ``label["values"]``;
``application/x-parquet`` has the label in its first column unless ``label_column`` names one
(``training/parquet.py``, which also streams row groups for k-means).
A channel's files are read one by one and stacked in order; empty files are skipped.

Each reader imports its codec when a channel of its format is read, so a job loads only the
formats it reads: a Parquet job, neither protobuf (RecordIO) nor Arrow's CSV reader (40 ms of
each training process's start).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smserve import media
from smserve.budget import MemoryBudget
from smserve.codecs.base import DecodeContext
from smserve.errors import ClientError
from smserve.scipy_sparse import sparse as sp
from smserve.training.channels import Channel
from smserve.training.failure import TrainingError
from smserve.training.parquet import read_parquet_file
from smserve.types import Features, FloatArray

logger = logging.getLogger(__name__)
# A training job reads each file whole by design: the instance's memory is its only limit, not
# a request's share of a serving worker's.
_WHOLE_FILES = DecodeContext(budget=MemoryBudget(cap_bytes=sys.maxsize, ratio=sys.maxsize))


@dataclass(frozen=True, slots=True)
class Dataset:
    """One channel's rows.

    features : float32 ndarray of shape (n_rows, n_features), C-contiguous, or float32 CSR.
    labels : float32 ndarray of shape (n_rows,), or None when the data carries no labels.
    """

    name: str
    features: Features
    labels: FloatArray | None

    @property
    def n_rows(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    def with_width(self, n_features: int) -> Dataset:
        """The same rows with sparse features widened to ``n_features`` columns."""
        if self.n_features == n_features:
            return self
        if not sp.issparse(self.features) or self.n_features > n_features:
            raise TrainingError(
                f"channel {self.name!r} has {self.n_features} features, expected {n_features}"
            )
        widened = sp.csr_matrix(self.features, shape=(self.n_rows, n_features))
        return Dataset(self.name, widened, self.labels)


FileReader = Callable[[Path, Channel], "Dataset | None"]


def read_channel(channel: Channel) -> Dataset:
    """Every file of ``channel`` read and stacked; raises TrainingError naming the problem."""
    reader = _READERS.get(channel.media.essence)
    if reader is None:
        raise TrainingError(
            f"channel {channel.name!r}: content type {channel.media.essence!r} is not "
            f"supported for training; use one of: {', '.join(_READERS)}"
        )
    read = (reader(path, channel) for path in channel.files())
    parts = [part for part in read if part is not None]
    if not parts:
        raise TrainingError(f"channel {channel.name!r}: every file in {channel.path} is empty")
    dataset = _stack(channel.name, parts)
    logger.info("channel %r: %d rows, %d features", channel.name, *dataset.features.shape)
    return dataset


def _read_csv(path: Path, channel: Channel) -> Dataset | None:
    label_size = _label_size(channel.media)
    body = path.read_bytes()
    if not body.strip():
        return None
    table = _parse_csv(body, path, channel.media)
    if table.shape[1] <= label_size:
        raise TrainingError(f"{path}: rows have {table.shape[1]} column(s) and no features")
    labels = table[:, 0].copy() if label_size else None
    return Dataset(path.name, np.ascontiguousarray(table[:, label_size:]), labels)


def _label_size(media_type: media.MediaType) -> int:
    value = media_type.params.get("label_size", "1")
    if value not in ("0", "1"):
        raise TrainingError(f"text/csv label_size={value!r} is not supported; use 0 or 1")
    return int(value)


def _parse_csv(body: bytes, path: Path, media_type: media.MediaType) -> FloatArray:
    """The rows of ``body``, label column included, parsed by the CSV codec: training reads
    the same numbers and refuses the same cells as serving does."""
    from smserve.codecs.csv import CsvCodec

    try:
        table: FloatArray = CsvCodec().decode(body, media_type, _WHOLE_FILES).features
    except ClientError as exc:
        raise TrainingError(_csv_refusal(path, body, exc.message)) from None
    return table


def _csv_refusal(path: Path, body: bytes, reason: str) -> str:
    try:
        body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return f"{path} cannot be read as UTF-8 text: {reason}"
    return f"{path} is not numeric CSV: {reason}"


def _read_libsvm(path: Path, channel: Channel) -> Dataset | None:
    body = path.read_bytes()
    if not body.strip():
        return None
    from smserve.codecs.libsvm import LibsvmCodec

    try:
        features, labels = LibsvmCodec(channel.libsvm_index_base).decode_labeled(body)
    except ClientError as exc:
        raise TrainingError(f"{path} is not valid libsvm: {exc.message}") from exc
    return Dataset(path.name, features, labels)


def _read_recordio(path: Path, channel: Channel) -> Dataset | None:
    body = path.read_bytes()
    if not body:
        return None
    from smserve.codecs.recordio.codec import read_records

    try:
        features, labels = read_records(body)
    except ClientError as exc:
        raise TrainingError(f"{path} is not valid RecordIO-protobuf: {exc.message}") from exc
    return Dataset(path.name, features, labels)


def _read_parquet(path: Path, channel: Channel) -> Dataset | None:
    features, labels = read_parquet_file(path, channel.label_column)
    return Dataset(path.name, features, labels) if features.shape[0] else None


_READERS: dict[str, FileReader] = {
    media.CSV: _read_csv,
    media.LIBSVM: _read_libsvm,
    media.RECORDIO: _read_recordio,
    media.PARQUET: _read_parquet,
}


def _stack(name: str, parts: Sequence[Dataset]) -> Dataset:
    labels = _stack_labels(name, parts)
    sparse = [sp.issparse(part.features) for part in parts]
    if all(sparse):
        width = max(part.n_features for part in parts)
        widened = [part.with_width(width).features for part in parts]
        return Dataset(name, sp.csr_matrix(sp.vstack(widened, format="csr")), labels)
    if any(sparse):
        raise TrainingError(f"channel {name!r} mixes dense and sparse files")
    _check_same_width(name, parts)
    if len(parts) == 1:  # one file: its rows as they are, not a copy
        return Dataset(name, parts[0].features, labels)
    return Dataset(name, np.concatenate([part.features for part in parts]), labels)


def _check_same_width(name: str, parts: Sequence[Dataset]) -> None:
    first = parts[0]
    for part in parts[1:]:
        if part.n_features != first.n_features:
            raise TrainingError(
                f"channel {name!r}: {part.name} has {part.n_features} features but "
                f"{first.name} has {first.n_features}"
            )


def _stack_labels(name: str, parts: Sequence[Dataset]) -> FloatArray | None:
    labels = [part.labels for part in parts]
    if all(label is None for label in labels):
        return None
    missing = [part.name for part in parts if part.labels is None]
    if missing:
        raise TrainingError(f"channel {name!r}: {', '.join(missing)} carry no labels")
    return np.concatenate([np.asarray(label, dtype=np.float32).ravel() for label in labels])
