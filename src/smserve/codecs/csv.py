"""text/csv: rows of features in, one line of outputs per row out.

It owns CSV parsing (fast path and tolerant fallback; Arrow's reader for big bodies in
``csv_arrow.py``) and CSV lines; numbers are written by ``csv_cells.py``, parsed by
``codecs/text.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import compress
from operator import methodcaller

import numpy as np
import numpy.typing as npt

from smserve.codecs.base import TEXT_PARAMETERS, UNNAMED, DecodeContext
from smserve.codecs.csv_arrow import ARROW_MIN_BYTES, first_line_width, parse_large
from smserve.codecs.csv_cells import Cell, cells
from smserve.codecs.csv_row import parse_row
from smserve.codecs.text import (
    blank_line_error,
    check_text_budget,
    decode_utf8,
    first_unparsable,
    load_numbers,
)
from smserve.errors import DecodeError, InvalidInput, excerpt
from smserve.media import CSV, MediaType
from smserve.types import Batch, FloatArray, Locate, Prediction

# An empty line before the last. The scan starts on a literal newline (a fast search); a
# leading alternation such as (?:^|\n) is tried at every character and costs 50 ms per 6 MiB.
_BLANK_LINE = re.compile(r"\n[ \t\r]*(?=\n)")
_BLANK_FIRST_LINE = re.compile(r"[ \t\r]*\n")


class CsvCodec:
    """Decodes and encodes ``text/csv``.

    Decoding: one row of features per line, no header, no label column; ``\r\n`` line ends,
    a trailing newline and blank lines are fine. An empty field is a missing value (NaN), as in
    SageMaker's built-in XGBoost; spaces around a number are fine, a field of only spaces is
    not. Numbers are anything numpy parses, including ``nan`` and ``inf``. The ``label_size``
    parameter may be ``0`` or ``1``: clients send either for a body of features only, and both
    mean exactly that. Errors name a 1-based row (the line number in the body, blank lines
    counted) and a 1-based column. With ``records_per_line`` (batch mode) a blank line before
    the last row is a 400 instead, since skipping it would misalign outputs with input lines.

    Encoding: one line per row, ``\\n``-terminated, outputs in Prediction order. A single
    vector output (n, k) writes its k values comma-separated; with several outputs a vector is
    one double-quoted Python list (``1,"[0.4, 0.6]"``), except the outputs named in
    ``Prediction.columns`` (contributions): they come after all the others, in that order, one
    column per value (per class in turn for (n, k, m)). Floats are written as Python's ``repr``
    of the float64 they promote to (``0.7338520884513855``, ``1.0``, ``nan``), integers as
    integers, booleans as 0 and 1.
    """

    media_type = CSV
    chunked = True  # lines
    parameters: Mapping[str, frozenset[str] | None] = {
        **TEXT_PARAMETERS,
        "label_size": frozenset({"0", "1"}),
    }

    def __init__(self, records_per_line: bool = False) -> None:
        self.records_per_line = records_per_line

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        _check_width(body, context)
        check_text_budget(body, context.budget.for_body(len(body)), CSV)
        row = parse_row(body)
        if row is not None:  # one line of plain numbers: ASCII
            return Batch(row, _locator(body))
        big = len(body) >= ARROW_MIN_BYTES
        large = parse_large(body) if big and not self.records_per_line else None
        if large is not None:  # only numbers, separators and line ends: ASCII, not empty
            return Batch(large, _locator(body))  # no text copy unless a value is located
        text = decode_utf8(body, CSV)
        if not text.strip():
            raise DecodeError("text/csv: the body is empty; send one row of features per line")
        if self.records_per_line:  # blank lines are checked in the text before Arrow parses
            _check_no_blank_lines(text)
            large = parse_large(body) if big else None
            if large is not None:
                return Batch(large, _locator(text))
        try:
            features = load_numbers(text, ",", np.float32)
        except ValueError:  # empty fields, lines of only spaces, or a real error
            features = _decode_tolerant(text)
        return Batch(np.ascontiguousarray(features, dtype=np.float32), _locator(text))

    def encode(self, prediction: Prediction) -> bytes:
        if prediction.n_rows == 0:
            return b""
        spread = [prediction.outputs[name] for name in prediction.columns]
        outputs = [array for name, array in prediction.items() if name not in prediction.columns]
        if len(outputs) + len(spread) == 1:
            lines: list[Cell] = cells([*outputs, *spread][0], quoted=False)
        else:
            columns = [cells(array, quoted=True) for array in outputs]
            columns += [cells(array, quoted=False) for array in spread]
            lines = list(map(b",".join, zip(*columns, strict=True)))
        lines.append(b"")  # the last newline, without copying the whole answer once more
        return b"\n".join(lines)


def _check_width(body: bytes, context: DecodeContext) -> None:
    """Refuse a first row wider than the model before parsing anything (a row of a million
    fields costs seconds to parse only to be refused), in the algorithms' words."""
    if context.n_features is not None:
        width = first_line_width(body)
        if width > context.n_features:
            raise InvalidInput(f"expected {context.n_features} features, got {width}")


def _check_no_blank_lines(text: str) -> None:
    body = text.rstrip("\r\n \t")
    if _BLANK_FIRST_LINE.match(body) is not None:
        raise blank_line_error(CSV, 1)
    match = _BLANK_LINE.search(body)
    if match is not None:
        raise blank_line_error(CSV, body.count("\n", 0, match.end()) + 1)


def _locator(body: str | bytes) -> Locate:
    """Names a value by its line number (blank lines counted), computed only when asked;
    ``body`` as text, or as bytes known to be ASCII."""

    def locate(row: int, column: int) -> str:
        text = body if isinstance(body, str) else body.decode("utf-8-sig")
        return f"row {_lines(text)[1][row]}, column {column + 1}"

    return locate


def _lines(text: str) -> tuple[list[str], npt.NDArray[np.intp]]:
    """The stripped non-blank lines of ``text`` and their 1-based line numbers."""
    stripped = list(map(str.strip, text.split("\n")))
    nonblank = np.fromiter(map(bool, stripped), dtype=bool, count=len(stripped))
    return list(compress(stripped, nonblank)), np.flatnonzero(nonblank) + 1


def _decode_tolerant(text: str) -> FloatArray:
    """The slow path: blank lines dropped, missing fields made ``nan``, errors located."""
    rows, line_numbers = _lines(text)
    width = _check_rectangular(rows, line_numbers)
    patched = _fill_missing("\n".join(rows))
    try:
        return load_numbers(patched, ",", np.float32)
    except ValueError:
        raise _bad_cell(patched, line_numbers, width) from None


def _fill_missing(text: str) -> str:
    """``text`` (stripped, non-blank rows joined by newlines) with ``nan`` in empty fields."""
    for _ in range(2):  # non-overlapping: ",,,," needs a second pass for its middle field
        text = text.replace(",,", ",nan,")
    text = text.replace("\n,", "\nnan,").replace(",\n", ",nan\n")
    text = "nan" + text if text.startswith(",") else text
    return text + "nan" if text.endswith(",") else text


def _check_rectangular(rows: Sequence[str], line_numbers: npt.NDArray[np.intp]) -> int:
    """The column count shared by every row; raises DecodeError naming a ragged row."""
    commas = np.fromiter(map(methodcaller("count", ","), rows), dtype=np.intp, count=len(rows))
    ragged = np.flatnonzero(commas != commas[0])
    if ragged.size:
        row = ragged[0]
        raise DecodeError(
            f"text/csv: row {line_numbers[row]} has {commas[row] + 1} columns but row "
            f"{line_numbers[0]} has {commas[0] + 1}; every row needs the same number of columns"
        )
    return int(commas[0]) + 1


def _bad_cell(patched: str, line_numbers: npt.NDArray[np.intp], width: int) -> DecodeError:
    cells = patched.replace("\n", ",").split(",")
    index = first_unparsable(cells, ",")
    if index is None:  # the parser disagreed with itself; say what we can
        return DecodeError("text/csv: the body could not be parsed as rows of numbers")
    row, column = divmod(index, width)
    return DecodeError(
        f"text/csv: row {line_numbers[row]}, column {column + 1}: "
        f"could not convert {excerpt(cells[index])!r} to a number"
    )
