"""Floats written as TF Serving writes them.

1. ``%g`` (six significant digits);
2. if that text does not parse back to the same value, ``%.9g`` for float32 or ``%.17g`` for
   float64 (their max_digits10);
3. ``.0`` appended when the text has neither ``.`` nor ``e``;
4. ``NaN``, ``Infinity``, ``-Infinity`` for the non-finite values.

So float32 ``42`` is ``42.0``, ``9000000`` is ``9e+06``, ``1/3`` is ``0.333333343``.

Speed: printf-style text has no vectorised numpy equivalent, so each value is formatted once
by a list comprehension (about 0.5 us a value). Which values may keep six digits is decided
for the whole array first by rounding in float64; only those candidates are checked again by
parsing their text, so a value is never written with digits that do not round-trip.
"""

from __future__ import annotations

import numpy as np

_FULL_PRECISION = {np.dtype(np.float32): ".9g", np.dtype(np.float64): ".17g"}


def format_floats(values: np.ndarray) -> np.ndarray:
    """The text of each element of a float32 or float64 array, as a str array of its shape."""
    flat = values.ravel()
    if flat.size == 0:
        return np.empty(values.shape, dtype=np.str_)
    wide = flat.astype(np.float64)
    finite = np.isfinite(wide)
    short = finite & _may_keep_six_digits(wide, finite, values.dtype)
    text = np.empty(flat.size, dtype=object)
    full = _FULL_PRECISION[values.dtype]
    text[short] = [_six_or_full(v, full, values.dtype) for v in wide[short].tolist()]
    longer = finite & ~short
    text[longer] = [format(v, full) for v in wide[longer].tolist()]
    return _finish(text, wide, finite).reshape(values.shape)


def _may_keep_six_digits(wide: np.ndarray, finite: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """True where rounding to six significant digits (probably) gives back the same value."""
    magnitude = np.where(finite & (wide != 0), np.abs(wide), 1.0)
    scale = 10.0 ** (5 - np.floor(np.log10(magnitude)))
    rounded = np.round(magnitude * scale) / scale
    return np.asarray((rounded.astype(dtype) == magnitude.astype(dtype)) | (wide == 0))


def _six_or_full(value: float, full: str, dtype: np.dtype) -> str:
    text = format(value, "g")
    return text if dtype.type(float(text)) == dtype.type(value) else format(value, full)


def _finish(text: np.ndarray, wide: np.ndarray, finite: np.ndarray) -> np.ndarray:
    text[np.isnan(wide)] = "NaN"
    text[wide == np.inf] = "Infinity"
    text[wide == -np.inf] = "-Infinity"
    strings = text.astype(np.str_)
    bare = finite & (np.strings.find(strings, ".") < 0) & (np.strings.find(strings, "e") < 0)
    if bare.any():
        strings = np.where(bare, np.strings.add(strings, ".0"), strings)
    return strings


def format_float(value: float, dtype: type[np.floating] = np.float32) -> str:
    """One value's text (see the module docstring)."""
    return str(format_floats(np.array([value], dtype=dtype))[0])
