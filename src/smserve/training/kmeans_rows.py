"""A k-means training channel as rows the passes can re-read: all in memory, or streamed from
Parquet row groups, so a channel larger than memory needs only one row group (plus one
mini-batch) at a time. The mini-batch pass, the weights of the extra centres and the epoch
scores all read chunk by chunk through ``Rows.chunks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

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
        return cls(channel.name, n_rows, chunks)

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

        return Rows(self.name, max(stop - start, 0), chunks)


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
