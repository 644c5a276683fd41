"""Typed reads of a decoded model document's members (a JSON object or UBJSON), for
``validation``: each raises ``Invalid`` saying what is missing or of the wrong kind."""

from __future__ import annotations

from typing import Any

import numpy as np

from smserve.algorithms.xgboost.ubjson import TYPED_ARRAYS

ARRAYS = (list, *TYPED_ARRAYS)  # a JSON list, or a UBJSON typed array


class Invalid(Exception):
    """The document breaks a rule; the message says where (the file is added later)."""


def member(container: Any, key: str, kind: type | tuple[type, ...]) -> Any:
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, kind):
        raise Invalid(f"it has no {key} (or not of the right type)")
    return value


def whole(value: Any, what: str, signed: bool = False) -> int:
    """An integer written as a number or a string, as XGBoost writes its parameters."""
    try:
        number = int(value) if not isinstance(value, float) else None
    except (TypeError, ValueError):
        number = None
    if number is None or (number < 0 and not signed):
        raise Invalid(f"{what} {value!r} is not a whole number")
    return number


def integers(value: Any, what: str) -> np.ndarray:
    """An array of integers (a JSON list or a UBJSON typed array) as int64."""
    if not isinstance(value, ARRAYS):
        raise Invalid(f"{what} is missing or not an array")
    try:
        array = np.asarray(value)
    except (ValueError, OverflowError):
        raise Invalid(f"{what} is not an array of integers") from None
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 1 or array.dtype.kind not in "iub":
        raise Invalid(f"{what} is not an array of integers")
    return array.astype(np.int64)


def length(value: Any) -> int | None:
    """The number of entries of an array (a JSON list or a UBJSON typed array), else None."""
    return len(value) if isinstance(value, ARRAYS) else None  # type: ignore[arg-type]


def sized(value: Any, n_nodes: int, what: str) -> Any:
    size = length(value)
    if size != n_nodes:
        raise Invalid(f"{what} has {'no' if size is None else size} entries for {n_nodes} nodes")
    return value
