"""What the columnar codecs (Parquet, Arrow IPC) share: an Arrow table into a Batch, with
columns put in the model's order by name, and a Prediction into an Arrow table.

It knows no file format; ``codecs/parquet.py`` and ``codecs/arrow.py`` read and write the bytes.

Column rule (``DecodeContext``): when every model feature name is a column, columns are taken
by name in the model's order, whatever the file's order, and any other column is a 400 naming
it (nothing is dropped silently: an id or label column left in is a client mistake to fix,
not something to guess about). Otherwise, a model with its own names answers 400 naming the
missing column; a model without names (k-means, XGBoost without ``feature_names``) takes the
columns by position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from smserve.codecs.base import DecodeContext
from smserve.errors import DecodeError, InvalidInput, PayloadTooLarge
from smserve.types import Batch, Prediction

# Decoded values allowed per body byte: plain Arrow or Parquet float data is 4-8 bytes a value,
# so this only refuses bodies that decompress far beyond their size (a compression bomb).
VALUES_PER_BODY_BYTE = 16
MIN_VALUES = 1_000_000
_NUMERIC = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, pa.types.is_decimal)


def check_size(n_values: int, body: bytes, media_type: str) -> None:
    """Raise PayloadTooLarge (413) when a body decodes to more values than it could hold."""
    limit = max(MIN_VALUES, VALUES_PER_BODY_BYTE * len(body))
    if n_values > limit:
        raise PayloadTooLarge(
            f"{media_type}: the body decodes to {n_values} values, more than the {limit} "
            f"allowed for a {len(body)}-byte body; send fewer rows per request"
        )


def batch_from_table(table: pa.Table, media_type: str, context: DecodeContext) -> Batch:
    """The float32 Batch of ``table``'s feature columns, in the model's order.

    Numeric columns (int, uint, float, bool, decimal) are cast to float32, a null is a missing
    value (NaN). Raises DecodeError for another column type, InvalidInput for missing, extra,
    duplicate or no columns, or no rows.
    """
    positions, names = _selection(table.column_names, media_type, context)
    if table.num_rows == 0:
        raise InvalidInput(f"{media_type}: the table has no rows; send at least one")
    features = np.empty((table.num_rows, len(names)), dtype=np.float32)
    with np.errstate(over="ignore"):  # beyond float32's range is inf, refused after decode
        for j, (position, name) in enumerate(zip(positions, names, strict=True)):
            features[:, j] = _float_values(table.column(position), name, media_type)
    return Batch(features, lambda row, column: f"row {row + 1}, column {names[column]!r}")


def _selection(
    columns: Sequence[str], media_type: str, context: DecodeContext
) -> tuple[list[int], list[str]]:
    """(positions in the table, names) of the feature columns, in the model's order."""
    if not columns:
        raise InvalidInput(f"{media_type}: the table has no columns")
    index = {name: i for i, name in enumerate(columns)}
    if len(index) < len(columns):
        twice = next(name for i, name in enumerate(columns) if index[name] != i)
        raise InvalidInput(f"{media_type}: column {twice!r} appears twice; names must be unique")
    wanted = context.feature_names
    if wanted and all(name in index for name in wanted):
        _check_no_extras(columns, wanted, media_type)
        return [index[name] for name in wanted], list(wanted)
    if not context.named:
        return list(range(len(columns))), list(columns)
    missing = [name for name in wanted if name not in index]
    raise InvalidInput(
        f"{media_type}: feature column {missing[0]!r} is missing"
        f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; the model reads "
        f"columns by name: {_listing(wanted)}"
    )


def _check_no_extras(columns: Sequence[str], wanted: Sequence[str], media_type: str) -> None:
    known = set(wanted)
    extra = [name for name in columns if name not in known]
    if extra:
        what = "is not a model feature column" if len(extra) == 1 else "are not model features"
        raise InvalidInput(
            f"{media_type}: {_listing(extra)} {what}; send only the feature columns "
            "(drop ids and labels)"
        )


def _listing(names: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(map(repr, names[:most]))
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _float_values(column: pa.ChunkedArray, name: str, media_type: str) -> np.ndarray:
    """A numeric column as a float ndarray (float32 or float64), nulls as NaN."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.cast(kind.value_type), kind.value_type
    if not any(test(kind) for test in _NUMERIC):
        raise DecodeError(
            f"{media_type}: column {name!r} holds {kind} values; feature columns must be "
            "numbers (int, uint, float, bool or decimal)"
        )
    if kind not in (pa.float32(), pa.float64()):  # safe=False: a uint64 rounds, as in numpy
        column = pc.cast(column, pa.float64(), safe=False)
    values: np.ndarray = column.to_numpy()
    return values


def table_from_prediction(prediction: Prediction) -> pa.Table:
    """One column per output key, in Prediction order, one row per input row; a vector
    output (n, k) is a fixed-size list of k values, (n, k, m) a list of k lists of m."""
    return pa.table({name: _column(array) for name, array in prediction.items()})


def _column(array: np.ndarray) -> pa.Array:
    values: pa.Array = pa.array(np.ascontiguousarray(array).reshape(-1))
    for width in reversed(array.shape[1:]):
        values = pa.FixedSizeListArray.from_arrays(values, width)
    return values
