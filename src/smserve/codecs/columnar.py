"""What the columnar codecs (Parquet, Arrow IPC) share: an Arrow table into a Batch, with
columns put in the model's order by name, and a Prediction into an Arrow table.

It knows no file format; ``codecs/parquet.py`` and ``codecs/arrow.py`` read and write the bytes.

Column rule (``DecodeContext.named``): a model with its own feature names (even ``f0``,
``f1``, ...) takes a table's columns only by name, in the model's order whatever the file's
order: a missing feature column is a 400 naming it (and how many more are missing), and any
other column is a 400 naming it (nothing is dropped silently: an id or label column left in is
a client mistake to fix, not something to guess about). Only a model without names (k-means,
XGBoost without ``feature_names``) takes the columns by position.

Memory: the codecs learn a body's schema and row count before reading its data, pick the
columns here (``select``) and charge ``decoded_bytes`` to the request's budget first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

from smserve.codecs.base import DecodeContext
from smserve.errors import DecodeError, InvalidInput, excerpt
from smserve.types import Batch, Prediction

_NUMERIC = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, pa.types.is_decimal)
_WIDEST_CAST = 8  # a column is cast to float64 on its way to float32, one column at a time
_PLAIN: dict[pa.DataType, np.dtype[Any]] = {
    pa.float32(): np.dtype(np.float32),
    pa.float64(): np.dtype(np.float64),
}  # float columns' dtypes: read from their buffers as they are
TILE_ROWS = 4096  # 4,096 rows x 50 float32 columns: 800 KB, within a core's L2 cache


@dataclass(frozen=True, slots=True)
class Selection:
    """The feature columns of a schema: their ``positions`` in it and ``names``, in the
    model's order, and the bytes one row of them takes as Arrow decodes them."""

    positions: list[int]
    names: list[str]
    row_bytes: int

    def decoded_bytes(self, rows: int, growing: bool = False) -> int:
        """What ``rows`` rows cost: Arrow's columns (twice, while ``growing`` builders
        double), the float32 batch, one float64 column."""
        arrow = self.row_bytes * (2 if growing else 1)
        return rows * (arrow + 4 * len(self.names) + _WIDEST_CAST)


def select(schema: pa.Schema, media_type: str, context: DecodeContext) -> Selection:
    """The feature columns of ``schema``; raises InvalidInput for missing, extra, duplicate or
    no columns, DecodeError for a feature column that does not hold numbers."""
    positions, names = _selection(schema.names, media_type, context)
    kinds = [schema.field(position).type for position in positions]
    for kind, name in zip(kinds, names, strict=True):
        _check_numeric(kind, name, media_type)
    return Selection(positions, names, sum(map(_value_bytes, kinds)))


def batch_from_table(
    table: pa.Table, media_type: str, context: DecodeContext, selection: Selection | None = None
) -> Batch:
    """The float32 Batch of ``table``'s feature columns, in the model's order.

    Numeric columns (int, uint, float, bool, decimal) are cast to float32, a null is a missing
    value (NaN). Raises DecodeError for another column type, InvalidInput for missing, extra,
    duplicate or no columns, or no rows. ``selection``: ``select`` of the table's schema,
    when the caller made it already.
    """
    selection = selection or select(table.schema, media_type, context)
    if table.num_rows == 0:
        raise InvalidInput(f"{media_type}: the table has no rows; send at least one")
    names = selection.names
    features = np.empty((table.num_rows, len(names)), dtype=np.float32)
    with np.errstate(over="ignore"):  # beyond float32's range is inf, refused after decode
        _fill(features, table.select(selection.positions))
    return Batch(features, lambda row, column: f"row {row + 1}, column {names[column]!r}")


def _fill(features: np.ndarray, table: pa.Table) -> None:
    """Write ``table``'s columns into ``features``: record batch by record batch, in tiles
    (``_fill_batch``), where the batches hold ``TILE_ROWS`` rows or more on average; else
    column by column, each column's chunks joined (many small batches: less work per batch)."""
    if max(column.num_chunks for column in table.columns) * TILE_ROWS > table.num_rows:
        for j, column in enumerate(table.columns):
            features[:, j] = _float_values(column)
        return
    plain = [_PLAIN.get(field.type) for field in table.schema]
    at = 0
    for batch in table.to_batches():  # views of the columns' chunks, no copies
        if batch.num_rows:
            _fill_batch(features[at : at + batch.num_rows], batch.columns, plain)
            at += batch.num_rows


def _fill_batch(
    rows: np.ndarray, columns: Sequence[pa.Array], plain: Sequence[np.dtype[Any] | None]
) -> None:
    """Write one record batch's columns into ``rows``. Float columns without nulls (views of
    their buffers; ``plain``: their dtype) are written a tile of ``TILE_ROWS`` rows at a time,
    every column of the tile while it is in the CPU's cache: three times faster than column by
    column from 100,000 rows up. The other columns are converted and written one at a time, so
    at most one converted column is held at once."""
    views = []
    for j, (column, dtype) in enumerate(zip(columns, plain, strict=True)):
        if dtype is not None and not column.null_count:
            views.append((j, _chunk_values(column, dtype)))
        else:
            rows[:, j] = _float_values(column)
    for start in range(0, rows.shape[0], TILE_ROWS):
        tile = rows[start : start + TILE_ROWS]
        for j, values in views:
            tile[:, j] = values[start : start + TILE_ROWS]


def _selection(
    columns: Sequence[str], media_type: str, context: DecodeContext
) -> tuple[list[int], list[str]]:
    """(positions in the table, names) of the feature columns, in the model's order."""
    if not columns:
        raise InvalidInput(f"{media_type}: the table has no columns")
    index = {name: i for i, name in enumerate(columns)}
    if len(index) < len(columns):
        twice = next(name for i, name in enumerate(columns) if index[name] != i)
        raise InvalidInput(
            f"{media_type}: column {excerpt(twice)!r} appears twice; names must be unique"
        )
    if not context.named:
        return list(range(len(columns))), list(columns)
    wanted = context.feature_names
    _check_names(columns, index, wanted, media_type)
    return [index[name] for name in wanted], list(wanted)


def _check_names(
    columns: Sequence[str], index: dict[str, int], wanted: Sequence[str], media_type: str
) -> None:
    """Raise InvalidInput naming a missing feature column, else an unknown column."""
    missing = [name for name in wanted if name not in index]
    known = set(wanted)
    extra = [name for name in columns if name not in known]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        also = f", and {_unknown(extra)}" if extra else ""
        raise InvalidInput(
            f"{media_type}: feature column {missing[0]!r} is missing{more}{also}; the model "
            f"reads columns by name: {_listing(wanted)}"
        )
    if extra:
        raise InvalidInput(
            f"{media_type}: {_unknown(extra)}; send only the feature columns (drop ids and labels)"
        )


def _unknown(extra: Sequence[str]) -> str:
    what = "is not a model feature column" if len(extra) == 1 else "are not model features"
    return f"{_listing(extra)} {what}"


def count(number: int, noun: str) -> str:
    """``1 row``, ``3 rows``: a count in a message."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _listing(names: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(repr(excerpt(name)) for name in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _check_numeric(kind: pa.DataType, name: str, media_type: str) -> None:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if not any(test(kind) for test in _NUMERIC):
        raise DecodeError(
            f"{media_type}: column {excerpt(name)!r} holds {kind} values; feature columns must "
            "be numbers (int, uint, float, bool or decimal)"
        )


def _value_bytes(kind: pa.DataType) -> int:
    """Bytes per value of a numeric column as Arrow holds it (a dictionary: its indices and
    values, at the widest)."""
    if pa.types.is_dictionary(kind):
        return _value_bytes(kind.index_type) + _value_bytes(kind.value_type)
    return max(1, int(kind.bit_width) // 8)


def _float_values(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric column (one array, or the chunks of a table's column joined) as a float
    ndarray (float32 or float64), nulls as NaN."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.cast(kind.value_type), kind.value_type
    dtype = _PLAIN.get(kind)
    if dtype is None:  # safe=False: a uint64 rounds, as in numpy
        column, dtype = _cast(column, pa.float64()), np.dtype(np.float64)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    values = [_chunk_values(chunk, dtype) for chunk in chunks if len(chunk)]
    return np.concatenate(values) if len(values) > 1 else values[0]


def _cast(column: pa.Array | pa.ChunkedArray, kind: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """``column`` as ``kind``, unchecked. ``pyarrow.compute`` is imported here, at the first
    cast: a training job on float columns never loads it (34 ms), and the server loads it with
    its codecs (``codecs.default_registry``)."""
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    return pc.cast(column, kind, safe=False)


def _chunk_values(chunk: pa.Array, dtype: np.dtype) -> np.ndarray:
    """A float chunk's values from its buffers, nulls as NaN (without nulls: a read-only view).
    pyarrow's own ``to_numpy``, and any ``pa.scalar`` (``fill_null``'s NaN), import pandas
    where it is installed: 0.15 s and tens of MB in a process that never uses it."""
    validity, data = chunk.buffers()[:2]
    start = chunk.offset * dtype.itemsize
    values = np.frombuffer(data, dtype=dtype, count=len(chunk), offset=start)
    if not chunk.null_count:
        return values
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    filled = values.copy()
    filled[bits[chunk.offset : chunk.offset + len(chunk)] == 0] = np.nan
    return filled


def table_from_prediction(prediction: Prediction) -> pa.Table:
    """One column per output key, in Prediction order, one row per input row; a vector
    output (n, k) is a fixed-size list of k values, (n, k, m) a list of k lists of m."""
    return pa.table({name: _column(array) for name, array in prediction.items()})


def _column(array: np.ndarray) -> pa.Array:
    values: pa.Array = pa.array(np.ascontiguousarray(array).reshape(-1))
    for width in reversed(array.shape[1:]):
        values = pa.FixedSizeListArray.from_arrays(values, width)
    return values
