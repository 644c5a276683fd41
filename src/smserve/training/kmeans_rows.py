"""A k-means training channel as rows the passes can re-read: all in memory, or streamed from
Parquet row groups, so a channel larger than memory needs only one row group (plus one
mini-batch) at a time. The mini-batch pass, the weights of the extra centres and the epoch
scores all read chunk by chunk through ``Rows.chunks``; ``mini_batches`` cuts one epoch's
batches from them and ``rows_at`` picks rows by position.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from smserve.scipy_sparse import sparse as sp
from smserve.training.channels import Channel
from smserve.training.data import Dataset
from smserve.training.failure import TrainingError
from smserve.training.parquet import count_rows, row_groups
from smserve.types import Features


@dataclass(frozen=True)
class Rows:
    """A channel's ``n_rows`` rows; ``chunks()`` reads them again, in order, each call."""

    name: str
    n_rows: int
    chunks: Callable[[], Iterator[Features]]
    from_files: bool = False  # read from its files again on each call of ``chunks``

    @classmethod
    def in_memory(cls, dataset: Dataset) -> Rows:
        return cls(dataset.name, dataset.n_rows, lambda: iter([dataset.features]))

    @classmethod
    def streamed(cls, channel: Channel, check: Callable[[Features, str], Features]) -> Rows:
        """The Parquet channel's rows, one checked row group at a time (labels dropped)."""

        def chunks() -> Iterator[Features]:
            for path in channel.files():
                for features, _ in row_groups(path, channel.label_column):
                    yield check(features, f"{channel.name!r} ({path.name})")

        n_rows = count_rows(channel)
        if n_rows == 0:
            raise TrainingError(f"channel {channel.name!r}: every file in {channel.path} is empty")
        return cls(channel.name, n_rows, chunks, from_files=True)

    def loaded(self) -> Rows:
        """The same rows, read into memory once (dense chunks copied into one array as they
        are read, each freed before the next: no list of every chunk and no second copy)."""
        parts = self.chunks()
        first = next(parts, None)
        if first is None or sp.issparse(first) or first.shape[0] >= self.n_rows:
            whole = join_chunks([first, *parts]) if first is not None else None
        else:
            whole = self._filled(itertools.chain([first], parts), first.shape[1])
        if whole is None:
            return Rows(self.name, 0, lambda: iter(()))
        return Rows(self.name, int(whole.shape[0]), lambda: iter([whole]))

    def _filled(self, parts: Iterator[Features], width: int) -> Features:
        out = np.empty((self.n_rows, width), dtype=np.float32)
        at = 0
        for part in parts:
            dense = part if isinstance(part, np.ndarray) else part.toarray()
            if at + dense.shape[0] > self.n_rows:
                raise TrainingError(f"channel {self.name!r} holds more rows than it counted")
            out[at : at + dense.shape[0]] = dense
            at += dense.shape[0]
        return out[:at]

    def part(self, rows: slice) -> Rows:
        """Only ``rows`` (a ``slice(start, stop)`` of the read order), still chunk by chunk."""
        start, stop, _ = rows.indices(self.n_rows)
        if (start, stop) == (0, self.n_rows):
            return self

        def chunks() -> Iterator[Features]:
            offset = 0
            for chunk in self.chunks():
                low, high = max(start - offset, 0), min(stop - offset, chunk.shape[0])
                offset += chunk.shape[0]
                if low < high:
                    yield chunk[low:high]

        return Rows(self.name, max(stop - start, 0), chunks, self.from_files)


def blocks(chunks: Iterator[Features], size: int) -> Iterator[Features]:
    """The chunks joined into blocks of at least ``size`` rows (the last may be smaller), so
    the first mini-batch holds enough rows to initialise every centre."""
    pending: list[Features] = []
    rows = 0
    for chunk in chunks:
        pending.append(chunk)
        rows += chunk.shape[0]
        if rows >= size:
            yield join_chunks(pending)
            pending, rows = [], 0
    if pending:
        yield join_chunks(pending)


def join_chunks(parts: list[Features]) -> Features:
    if len(parts) == 1:
        return parts[0]
    if all(sp.issparse(part) for part in parts):
        return sp.csr_matrix(sp.vstack(parts, format="csr"))
    return np.concatenate(parts)


def mini_batches(
    rows: Rows, steps: int, window: int, rng: np.random.Generator
) -> Iterator[Features]:
    """Exactly ``steps`` batches of one epoch, every row in one of them: the rows in read
    order, shuffled within windows of at least ``window`` rows (the chunks joined; rows in
    memory are one window), cut where the i-th batch ends, at row ``(i + 1) * n_rows // steps``
    (a batch past the last row is empty)."""
    ends = [(i + 1) * rows.n_rows // steps for i in range(steps)]
    cut = _Cut()
    empty: Features = np.zeros((0, 0), dtype=np.float32)
    for block in blocks(rows.chunks(), window):
        order, used, empty = rng.permutation(block.shape[0]), 0, block[:0]
        while cut.done < steps and cut.rows + block.shape[0] - used >= ends[cut.done]:
            take = ends[cut.done] - cut.rows
            yield cut.batch(block[order[used : used + take]])
            used += take
        cut.hold(block[order[used:]])
    while cut.done < steps:
        yield cut.batch(empty)


class _Cut:
    """The batches cut so far (``done``), the rows they and the pending pieces hold."""

    def __init__(self) -> None:
        self.done, self.rows, self.pending = 0, 0, list[Features]()

    def hold(self, piece: Features) -> None:
        if piece.shape[0]:
            self.pending.append(piece)
            self.rows += int(piece.shape[0])

    def batch(self, last: Features) -> Features:
        """The pending pieces and ``last`` as the next batch."""
        batch = join_chunks([*self.pending, last])
        self.pending, self.done = [], self.done + 1
        self.rows += int(last.shape[0])
        return batch


def rows_at(rows: Rows, positions: npt.NDArray[np.int64]) -> Features:
    """The rows at ``positions`` (sorted, within ``n_rows``) of the read order, in one pass."""
    picked, offset = [], 0
    for chunk in rows.chunks():
        inside = positions[(positions >= offset) & (positions < offset + chunk.shape[0])]
        if inside.size:
            picked.append(chunk[inside - offset])
        offset += chunk.shape[0]
    return join_chunks(picked)
