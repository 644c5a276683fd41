"""One JSON value to one dense float tensor, with TF Serving's rules and error messages.

The shape comes from the first element at each nesting level; every list must then have the
size of that level, and every number must sit at the innermost level. Only JSON numbers are
floats: ``true``, strings, null and objects are type errors.

The common case (a rectangular list of numbers) is converted by numpy in one call. Whenever
numpy's answer could differ from TF Serving's (ragged lists, strings, nulls, huge integers,
or a body that holds a ``true``/``false`` token, which numpy would turn into 1.0/0.0), the
exact element-by-element walk runs instead and raises the precise error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from smserve.errors import InvalidInput
from smserve.tfserving.debugjson import debug_string, json_type_name

FLOAT = "float"  # DataTypeString(DT_FLOAT), as the type errors name it
MAX_RANK = 64  # numpy's limit; it also bounds the recursion of the exact walk


def float_tensor(value: Any, may_hold_bools: bool) -> np.ndarray:
    """``value`` as a float32 tensor; raises InvalidInput with TF Serving's message."""
    if not may_hold_bools:
        fast = numpy_tensor(value)
        if fast is not None:
            return fast
    shape = dense_shape(value)
    if len(shape) > MAX_RANK:
        raise InvalidInput(
            f"JSON Value nests lists {len(shape)} deep; at most {MAX_RANK} are allowed"
        )
    flat: list[float] = []
    _fill(value, 0, shape, flat)
    with np.errstate(over="ignore"):
        return np.asarray(flat, dtype=np.float32).reshape(shape)


def numpy_tensor(value: Any) -> np.ndarray | None:
    """``value`` converted by numpy alone, or None when only the exact walk can tell.

    Callers must know that ``value`` holds no ``true``/``false`` (numpy reads them as 1/0)."""
    try:
        array = np.asarray(value)
    except (ValueError, OverflowError):
        return None  # ragged: the walk names the offending list
    if array.dtype.kind not in "fiu":
        return None
    with np.errstate(over="ignore"):  # beyond float32 range is an infinity, as in TF
        return array.astype(np.float32)


def dense_shape(value: Any) -> list[int]:
    """Sizes of the first list at each level (``[]`` for a scalar)."""
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _fill(value: Any, level: int, shape: list[int], flat: list[float]) -> None:
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise InvalidInput(
                f"JSON Value: {debug_string(value)} found at incorrect level: {level + 1} "
                f"in the JSON DOM. Expected at level: {rank}"
            )
        flat.append(_number(value))
        return
    if level >= rank:
        raise InvalidInput(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise InvalidInput(
            f"Encountered list at unexpected size: {len(value)} at level: {level} "
            f"expected size: {shape[level]}"
        )
    for item in value:
        _fill(item, level + 1, shape, flat)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise type_error(value, FLOAT)
    try:
        return float(value)
    except OverflowError:  # an integer beyond double range reads as an infinity
        return math.copysign(math.inf, value)


def type_error(value: Any, dtype: str) -> InvalidInput:
    return InvalidInput(
        f"JSON Value: {debug_string(value)} Type: {json_type_name(value)} "
        f"is not of expected type: {dtype}"
    )


def shape_text(shape: list[int] | tuple[int, ...]) -> str:
    """``[2,3]``: TF Serving's compact shape text."""
    return "[" + ",".join(str(d) for d in shape) + "]"
