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
_CLOSE = ord("]")
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
    writes the whole matrix and each row is a view of that text between its brackets (found
    by one numpy comparison); the rows holding a value orjson writes unlike ``repr`` are
    written again with those values marked and then replaced by their ``repr``."""
    rows = np.ascontiguousarray(array, dtype=np.float64).reshape(len(array), -1)
    result = _row_views(orjson.dumps(rows, option=orjson.OPT_SERIALIZE_NUMPY))
    odd = _unlike_repr(rows)
    patched = np.flatnonzero(odd.any(axis=1))
    if patched.size:
        fixed = _marked_rows(rows[patched], odd[patched])
        for row, cell in zip(patched.tolist(), fixed, strict=True):  # odd rows only
            result[row] = cell
    return result


def _row_views(text: bytes) -> list[Cell]:
    """The rows of orjson's 2-D array text ``[[a,b],[c,d]]`` as views: ``a,b`` and ``c,d``."""
    ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == _CLOSE)[:-1]
    starts = np.empty_like(ends)
    starts[0], starts[1:] = 2, ends[:-1] + 3  # past "[[", then past "],["
    view = memoryview(text)
    return list(map(view.__getitem__, map(slice, starts.tolist(), ends.tolist())))


def _marked_rows(rows: npt.NDArray[np.float64], odd: npt.NDArray[np.bool_]) -> list[Cell]:
    """Cells for ``rows`` whose values at ``odd`` orjson writes unlike ``repr``."""
    if (rows == _MARK).any():  # the mark would not be found exactly: the reference path
        return list(token_cells(rows, quoted=False))
    marked = np.where(odd, _MARK, rows)
    pieces = orjson.dumps(marked, option=orjson.OPT_SERIALIZE_NUMPY).split(_MARK_TEXT)
    spliced: list[bytes] = [b""] * (2 * len(pieces) - 1)
    spliced[0::2] = pieces
    spliced[1::2] = [repr(value).encode() for value in rows[odd].tolist()]
    return _row_views(b"".join(spliced))


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
