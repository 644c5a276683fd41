"""The data passed between codecs, algorithms and the service: a Batch in, a Prediction out."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from smserve.scipy_sparse import sparse as sp

FloatArray: TypeAlias = npt.NDArray[np.float32]
Features: TypeAlias = "FloatArray | sp.csr_matrix"
# (row, column), 0-based -> where that value is in the request body, for error messages.
Locate: TypeAlias = Callable[[int, int], str]


def by_row(row: int, column: int) -> str:
    """The default location: ``row 3, column 2`` (1-based)."""
    return f"row {row + 1}, column {column + 1}"


@dataclass(frozen=True, slots=True)
class Batch:
    """Rows to predict on.

    features : ndarray of shape (n_rows, n_columns), float32, C-contiguous; or a float32
        ``scipy.sparse.csr_matrix`` of the same shape whose absent entries are missing values.
        Decoders guarantee this; algorithms rely on it and never convert again.
    locate : names a value's place in the body in the body's own terms (``line 4, column 2``,
        ``record 3, column 1``); every message about one value uses it. Rows and columns are
        1-based in what it returns.
    """

    features: Features
    locate: Locate = field(default=by_row, compare=False)

    def __post_init__(self) -> None:
        features = self.features
        assert features.dtype == np.float32, features.dtype
        assert features.ndim == 2, features.shape
        if isinstance(features, np.ndarray):
            assert features.flags.c_contiguous

    @property
    def n_rows(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.features.shape[1])

    @property
    def is_sparse(self) -> bool:
        return bool(sp.issparse(self.features))


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """One output's element type and its shape per row (``()`` for one number per row,
    ``(k,)`` for a vector, ``(k, m)`` for one vector per class)."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]

    @classmethod
    def of(cls, array: np.ndarray) -> OutputSpec:
        """The spec of an output, from any number of rows of it."""
        return cls(array.dtype, tuple(int(size) for size in array.shape[1:]))


@dataclass(frozen=True, slots=True)
class Prediction:
    """Named outputs, one entry per input row, in the order encoders write them.

    Each value is an ndarray of shape (n_rows,) for a scalar output, (n_rows, k) for a
    vector output (class probabilities, labels, contributions), or (n_rows, k, m) for one
    vector per class (multi-class contributions). Floating outputs may hold NaN; encoders
    decide how to write it (strict JSON writes ``null``).

    ``columns`` names the outputs that tabular encoders (CSV) spread over one column per
    value, after the other outputs, instead of writing one cell for them.
    """

    outputs: Mapping[str, np.ndarray]
    columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        sizes = {array.shape[0] for array in self.outputs.values()}
        assert len(sizes) <= 1, f"outputs disagree on the row count: {sizes}"

    @property
    def n_rows(self) -> int:
        return next(iter(self.outputs.values())).shape[0] if self.outputs else 0

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.outputs)

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        return iter(self.outputs.items())
