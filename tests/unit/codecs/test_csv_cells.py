"""The whole-matrix CSV writer against the per-token writer and against plain ``repr``: every
float promoted to float64 and written as ``repr`` writes it, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from smserve.codecs.csv import CsvCodec
from smserve.codecs.csv_cells import token_cells, vector_cells
from smserve.types import Prediction

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -2.5e-5, 1e-7, 1e16, 1.7976931348623157e308]
MARK = -1.2345678901234567e300  # the writer's stand-in value, sent as a real value too


def by_repr(array: np.ndarray) -> list[bytes]:
    """The reference: each row's values as ``repr`` of their float64, comma-separated."""
    rows = array.astype(np.float64).reshape(len(array), -1).tolist()
    return [",".join(map(repr, row)).encode() for row in rows]


def random_values(seed: int, shape: tuple[int, ...], dtype: type[np.floating]) -> np.ndarray:
    """Signed values over many exponents (1e-320 .. 1e300 for float64), with the special
    values, exact zeros and whole numbers sprinkled in."""
    rng = np.random.default_rng(seed)
    top = 300 if dtype is np.float64 else 36
    exponents = rng.integers(-top - 20, top, size=shape)
    values = rng.normal(size=shape) * 10.0 ** exponents.astype(np.float64)
    flat = values.reshape(-1)
    picks = rng.integers(0, flat.size, size=flat.size // 10)
    flat[picks] = rng.choice(SPECIAL + [1.0, -3.0, 0.0], size=picks.size)
    with np.errstate(over="ignore"):
        return values.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 17), (300, 51), (40, 3, 9)], ids=["1-row", "wide", "3-d"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_the_token_writer_and_repr(
    seed: int, shape: tuple[int, ...], dtype: type[np.floating]
) -> None:
    array = random_values(seed, shape, dtype)
    written = [bytes(cell) for cell in vector_cells(array)]
    assert written == token_cells(array, quoted=False)
    assert written == by_repr(array)


def test_rows_without_odd_values_are_views_of_one_text() -> None:
    array = np.full((50, 20), 0.5, dtype=np.float32)
    array[7, 3] = np.nan
    cells = vector_cells(array)
    assert isinstance(cells[0], memoryview)
    assert bytes(cells[7]) == b",".join([b"0.5"] * 3 + [b"nan"] + [b"0.5"] * 16)


def test_a_value_equal_to_the_writers_mark_is_written_as_itself() -> None:
    array = random_values(4, (30, 20), np.float64)
    array[5, 2], array[5, 9] = MARK, np.nan  # the mark beside a value that needs it
    array[6, 0] = MARK
    assert [bytes(cell) for cell in vector_cells(array)] == by_repr(array)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_csv_answers_equal_the_reference_with_and_without_other_outputs(
    dtype: type[np.floating],
) -> None:
    contributions = random_values(5, (200, 3, 11), dtype)
    labels = np.arange(200, dtype=np.int64) % 3
    alone = Prediction({"c": contributions}, columns=("c",))
    both = Prediction({"label": labels, "c": contributions}, columns=("c",))
    lines = by_repr(contributions)
    assert CsvCodec().encode(alone) == b"".join(line + b"\n" for line in lines)
    expected = [b"%d,%b\n" % (label, line) for label, line in zip(labels, lines, strict=True)]
    assert CsvCodec().encode(both) == b"".join(expected)
