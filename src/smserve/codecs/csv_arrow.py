"""Big ``text/csv`` bodies parsed by Arrow's C++ CSV reader, with the numpy path's semantics.

Arrow is only asked for what it answers exactly as ``np.loadtxt`` (via ``csv.py``) would:
numbers parsed as float64 and cast to float32 (as numpy does), an empty field a missing value,
blank lines skipped, ``\\r\\n`` line ends, spaces around numbers. Anything it refuses (a bad
cell, a ragged row, a line of spaces, quotes) answers None, and the caller's numpy path gives
the result or the located error; a lone ``\\r`` (a line end to Arrow, an error to numpy) is
never given to Arrow. Below ``ARROW_MIN_BYTES`` numpy is faster (Arrow's fixed cost is about
0.2 ms), so the caller only comes here for bigger bodies. Arrow parses 1 MiB blocks on its own
thread pool (one thread per CPU, shared by the process).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.csv as arrow_csv  # type: ignore[import-untyped]

from smserve.types import FloatArray

ARROW_MIN_BYTES = 128 * 1024  # measured crossover: 100 rows x 50 (46 KB) numpy, 300 rows Arrow
_PARSE = arrow_csv.ParseOptions(
    quote_char=False, double_quote=False, escape_char=False, newlines_in_values=False
)


def parse_large(body: bytes) -> FloatArray | None:
    """The (n_rows, n_columns) float32 rows of ``body`` (valid UTF-8), or None when the numpy
    path must decide."""
    body = body.removeprefix(b"\xef\xbb\xbf")
    if body.count(b"\r") != body.count(b"\r\n"):
        return None
    names = [f"f{i}" for i in range(_width(body))]
    convert = arrow_csv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.float64()),
        null_values=[""],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    read = arrow_csv.ReadOptions(column_names=names, use_threads=True)
    try:
        table = arrow_csv.read_csv(
            pa.BufferReader(body), read_options=read, parse_options=_PARSE, convert_options=convert
        )
    except pa.ArrowException:
        return None
    return _rows(table)


def _width(body: bytes) -> int:
    """Columns in the first non-blank line."""
    start = len(body) - len(body.lstrip(b"\r\n"))
    end = body.find(b"\n", start)
    return body.count(b",", start, end if end >= 0 else len(body)) + 1


def _rows(table: pa.Table) -> FloatArray:
    rows = np.empty((table.num_rows, table.num_columns), dtype=np.float32)
    with np.errstate(over="ignore"):  # beyond float32 is inf, as numpy's parser gives
        for j in range(table.num_columns):
            rows[:, j] = table.column(j).to_numpy()
    return rows
