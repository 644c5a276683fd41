"""One epoch's mini-batches and rows picked by position, from rows in memory or in chunks."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import scipy.sparse as sp

from smserve.training.data import Dataset
from smserve.training.kmeans_rows import Rows, mini_batches, rows_at
from smserve.types import Features


def numbered(n_rows: int) -> np.ndarray:
    """Rows whose first value is their position, so a batch tells which rows it holds."""
    return np.column_stack([np.arange(n_rows), np.zeros(n_rows)]).astype(np.float32)


def chunked(features: Features, size: int) -> Rows:
    def chunks() -> Iterator[Features]:
        for start in range(0, features.shape[0], size):
            yield features[start : start + size]

    return Rows("train", features.shape[0], chunks, from_files=True)


def positions(batch: Features) -> list[int]:
    if batch.shape[0] == 0:
        return []
    dense = batch.toarray() if sp.issparse(batch) else batch
    return [int(v) for v in dense[:, 0]]


@pytest.mark.parametrize(
    ("n_rows", "steps", "chunk", "window"),
    [(1000, 7, 1000, 100), (1000, 7, 30, 100), (1000, 1, 64, 10), (5, 9, 2, 3), (0, 3, 4, 2)],
    ids=["in-memory", "streamed", "one-step", "more-steps-than-rows", "no-rows"],
)
def test_every_row_is_in_exactly_one_of_exactly_steps_batches(
    n_rows: int, steps: int, chunk: int, window: int
) -> None:
    rows = chunked(numbered(n_rows), chunk)
    batches = list(mini_batches(rows, steps, window, np.random.default_rng(0)))
    assert len(batches) == steps
    sizes = [b.shape[0] for b in batches]
    assert sizes == [(i + 1) * n_rows // steps - i * n_rows // steps for i in range(steps)]
    seen = sorted(p for b in batches for p in positions(b))
    assert seen == list(range(n_rows))


def test_rows_are_shuffled_within_windows_and_the_order_is_seeded() -> None:
    rows = chunked(numbered(400), 50)
    first = [positions(b) for b in mini_batches(rows, 4, 100, np.random.default_rng(3))]
    again = [positions(b) for b in mini_batches(rows, 4, 100, np.random.default_rng(3))]
    assert first == again
    assert first[0] != sorted(first[0])  # shuffled
    assert sorted(first[0]) == list(range(100))  # within the first window of two chunks


def test_sparse_rows_are_cut_the_same_way() -> None:
    rows = chunked(sp.csr_matrix(numbered(90)), 20)
    batches = list(mini_batches(rows, 4, 25, np.random.default_rng(1)))
    assert all(sp.issparse(b) for b in batches)
    assert sorted(p for b in batches for p in positions(b)) == list(range(90))


@pytest.mark.parametrize("chunk", [7, 100])
def test_rows_at_picks_positions_across_chunks(chunk: int) -> None:
    wanted = np.array([0, 6, 7, 50, 99], dtype=np.int64)
    assert positions(rows_at(chunked(numbered(100), chunk), wanted)) == wanted.tolist()


def test_loaded_rows_are_one_array_read_once() -> None:
    reads = []
    features = numbered(100)

    def chunks() -> Iterator[Features]:
        reads.append(1)
        yield from (features[i : i + 30] for i in range(0, 100, 30))

    loaded = Rows("train", 100, chunks, from_files=True).loaded()
    assert not loaded.from_files
    for _ in range(3):
        (whole,) = list(loaded.chunks())
        np.testing.assert_array_equal(whole, features)
    assert len(reads) == 1
    in_memory = Rows.in_memory(Dataset("train", features, None))
    assert list(in_memory.loaded().chunks())[0] is features
