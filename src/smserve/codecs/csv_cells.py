"""CSV number formatting: one cell per prediction row, every float as Python's ``repr`` of
the float64 it promotes to, written by orjson (the shortest round-trip digits, as ``repr``).

``csv.py`` decides which outputs become cells and how cells join into lines; this module only
turns one output array into cells. orjson writes a few values unlike ``repr`` (``null`` for
NaN and infinities, ``0.000015`` or ``1e-7`` where ``repr`` writes ``1.5e-05``, ``1e-07``):
those values are found by magnitude and written by ``repr`` itself.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import orjson

from smserve.codecs.text import number_tokens, row_cells

Cell = bytes | memoryview  # a memoryview into orjson's text saves a copy of every row

SMALLEST_POSITIONAL = 1e-4  # Python's repr switches to exponent notation below this
FEW_VALUES = 16  # outputs up to this many values are checked one by one (a fixed bound)
# Stands in for every value orjson writes unlike repr, so one orjson call writes the rows
# that hold them too. Its text cannot occur inside another number's, so it is found exactly
# as long as no real value equals it (else those rows take the per-token path).
_MARK = -1.2345678901234567e300
_MARK_TEXT = orjson.dumps(_MARK)


def cells(array: np.ndarray, quoted: bool) -> list[Cell]:
    """One CSV cell per row: a number, k comma-separated numbers, or a quoted Python list."""
    if not quoted and array.ndim > 1 and array.dtype.kind == "f" and array.size > FEW_VALUES:
        return vector_cells(array)
    return list(token_cells(array, quoted))


def token_cells(array: np.ndarray, quoted: bool) -> list[bytes]:
    """``cells`` through one token per value (any dtype and shape; the reference writer)."""
    tokens = number_tokens(array)
    if array.dtype.kind == "f":
        _patch_floats(tokens, np.ascontiguousarray(array, dtype=np.float64).reshape(-1))
    if quoted:
        return row_cells(array, tokens, b", ", b'"[%b]"')
    return row_cells(array, tokens, b",")


def vector_cells(array: np.ndarray) -> list[Cell]:
    """``cells(array, quoted=False)`` for a float output of shape (n, ...): one orjson call
    writes the whole matrix, with every value it writes unlike ``repr`` replaced by a mark,
    and each row is a view of that text between its brackets. The rows holding a mark are
    then joined, split at the marks once, given those values' ``repr`` and split again."""
    rows = np.array(array, dtype=np.float64, order="C").reshape(len(array), -1)  # a copy
    odd = _unlike_repr(rows)
    patched = np.flatnonzero(odd.any(axis=1))
    if not patched.size:
        return _row_views(orjson.dumps(rows, option=orjson.OPT_SERIALIZE_NUMPY))
    if (rows[patched] == _MARK).any():  # the mark would not be found exactly
        return _without_mark(rows, patched)
    values = [repr(value).encode() for value in rows[odd].tolist()]
    np.putmask(rows, odd, _MARK)
    result = _row_views(orjson.dumps(rows, option=orjson.OPT_SERIALIZE_NUMPY))
    marked = patched.tolist()
    for row, cell in zip(marked, _spliced([result[row] for row in marked], values), strict=True):
        result[row] = cell
    return result


def _row_views(text: bytes) -> list[Cell]:
    """The rows of orjson's 2-D array text ``[[a,b],[c,d]]`` as views: ``a,b`` and ``c,d``.
    A number's text holds no ``]``, so each row ends at the next one (found by memchr)."""
    view, find = memoryview(text), text.find
    rows: list[Cell] = []
    start, last = 2, len(text) - 2  # past "[["; the last row ends at the final "]]"
    end = find(b"]", start)
    while end < last:
        rows.append(view[start:end])
        start = end + 3  # past "],["
        end = find(b"]", start)
    rows.append(view[start:end])
    return rows


def _spliced(cells: list[Cell], values: list[bytes]) -> list[bytes]:
    """``cells`` with their marks, in order, replaced by ``values``."""
    pieces = b"\n".join(cells).split(_MARK_TEXT)
    assert len(pieces) == len(values) + 1, "every mark is one replaced value"
    spliced: list[bytes] = [b""] * (2 * len(pieces) - 1)
    spliced[0::2] = pieces
    spliced[1::2] = values
    return b"".join(spliced).split(b"\n")


def _without_mark(rows: npt.NDArray[np.float64], patched: npt.NDArray[np.intp]) -> list[Cell]:
    """The rows at ``patched``, one of which holds the mark's value, through the per-token
    writer; the others as views of one orjson text."""
    result = _row_views(orjson.dumps(rows, option=orjson.OPT_SERIALIZE_NUMPY))
    fixed = token_cells(rows[patched], quoted=False)
    for row, cell in zip(patched.tolist(), fixed, strict=True):
        result[row] = cell
    return result


def _unlike_repr(values: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    magnitude = np.abs(values)
    return ~np.isfinite(values) | ((magnitude < SMALLEST_POSITIONAL) & (magnitude > 0))


def _patch_floats(tokens: list[bytes], flat: npt.NDArray[np.float64]) -> None:
    """Make orjson's float text ``repr``'s: it has the same shortest round-trip digits but
    writes null for nan/inf, and ``0.000015`` or ``1e-7`` (not ``1.5e-05``, ``1e-07``) between
    1e-9 and 1e-4; the tests pin this against ``repr``."""
    if flat.size <= FEW_VALUES:  # a small answer: cheaper in Python than five numpy passes
        where = [i for i, value in enumerate(flat.tolist()) if not _written_alike(value)]
    else:
        where = np.flatnonzero(_unlike_repr(flat)).tolist()
    for index in where:
        tokens[index] = repr(float(flat[index])).encode()


def _written_alike(value: float) -> bool:
    """True when orjson writes ``value`` as ``repr`` does (zero, or finite and >= 1e-4)."""
    return value == 0 or SMALLEST_POSITIONAL <= abs(value) < math.inf
