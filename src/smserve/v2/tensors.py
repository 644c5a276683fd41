"""Input tensors to the model's float32 matrix.

JSON ``data`` may be flat or nested (row-major either way); numpy reads it in one call, then
its element kind is checked against the datatype (as are gRPC's typed ``contents``, read by
that door into an array of the field's own type): ``BOOL`` takes only booleans, integer types
only integers within the type's range, ``FP32``/``FP64`` any numbers (booleans read as 0/1,
the coercion the spec allows). Binary data is read as little-endian values of the datatype's
size. The element count must equal the shape's product, and the model takes one input of
shape ``[n_rows, n_features]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from smserve.budget import UNLIMITED, RequestBudget
from smserve.errors import InvalidInput, excerpt
from smserve.service import ShapeWording
from smserve.v2.datatypes import input_dtype
from smserve.v2.request import InputTensor

# Each declared value: numpy's reading of the JSON (8 bytes), the datatype's array, and the
# model's float32 matrix. Binary data is read in place (no first term then, but charged alike).
_JSON_VALUE_BYTES = 8


def decode_input(tensor: InputTensor, budget: RequestBudget = UNLIMITED) -> np.ndarray:
    """The tensor as an array of its datatype and shape; raises InvalidInput, and
    PayloadTooLarge when its declared shape is over ``budget`` (checked before any array)."""
    dtype = input_dtype(tensor.datatype, tensor.name)
    count = math.prod(tensor.shape)
    budget.check(
        count * (_JSON_VALUE_BYTES + dtype.itemsize + 4),
        f"input '{excerpt(tensor.name)}' of shape {list(tensor.shape)}",
    )
    if isinstance(tensor.data, memoryview):
        values = _binary(tensor, dtype)
    elif isinstance(tensor.data, np.ndarray):
        values = _checked(tensor.data.reshape(-1), dtype, tensor.name)
    else:
        values = _checked(_json_values(tensor), dtype, tensor.name)
    if values.size != count:
        raise InvalidInput(
            f"input '{tensor.name}': shape {list(tensor.shape)} holds {count} values, but "
            f"'data' has {values.size}; make them agree"
        )
    return values.reshape(tensor.shape)


def _json_values(tensor: InputTensor) -> np.ndarray:
    if not isinstance(tensor.data, list):
        raise InvalidInput(f"input '{tensor.name}': 'data' must be a list (flat or nested)")
    try:
        return np.asarray(tensor.data).reshape(-1)
    except ValueError:
        raise InvalidInput(
            f"input '{tensor.name}': nested 'data' is ragged or nested more than 64 levels "
            "deep; every row must have the same length (or send it flat)"
        ) from None


def _checked(values: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """``values`` (numpy's reading of the JSON) cast to ``dtype`` after checking its kind."""
    kind = values.dtype.kind
    if values.size == 0:
        return values.astype(dtype)
    if dtype.kind == "b":
        if kind != "b":
            raise InvalidInput(f"input '{name}' is BOOL: 'data' must hold only true/false")
        return values
    if kind not in "biuf":
        raise InvalidInput(f"input '{name}': 'data' must hold only numbers, got {_example(values)}")
    if dtype.kind in "iu":
        return _integers(values, dtype, name)
    with np.errstate(over="ignore"):  # beyond FP32's range -> inf, refused by the service
        return values.astype(dtype)


def _example(values: np.ndarray) -> str:
    if values.dtype.kind == "O":
        odd = next(v for v in values if not isinstance(v, int | float))
        return repr(odd)[:40]
    return repr(values[0].item())[:40]


def _integers(values: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    if values.dtype.kind == "f":
        raise InvalidInput(f"input '{name}' is {_name(dtype)}: 'data' must hold whole numbers")
    limits = np.iinfo(dtype)
    low, high = values.min(), values.max()
    if low < limits.min or high > limits.max:
        bad = low if low < limits.min else high
        raise InvalidInput(
            f"input '{name}': {bad} is out of range for {_name(dtype)} "
            f"({limits.min} to {limits.max})"
        )
    return values.astype(dtype)


def _name(dtype: np.dtype) -> str:
    return f"{'UINT' if dtype.kind == 'u' else 'INT'}{dtype.itemsize * 8}"


def _binary(tensor: InputTensor, dtype: np.dtype) -> np.ndarray:
    raw: memoryview = tensor.data
    expected = math.prod(tensor.shape) * dtype.itemsize
    if len(raw) != expected:
        raise InvalidInput(
            f"input '{tensor.name}': {tensor.raw_field} is {len(raw)} bytes, but shape "
            f"{list(tensor.shape)} of {tensor.datatype} takes {expected}"
        )
    if dtype.kind != "b":
        values = np.frombuffer(raw, dtype=dtype)
        # A tensor after a JSON header of any length can start at an odd address; XGBoost
        # refuses a misaligned pointer, so such a tensor is copied (one memcpy).
        return values if values.flags.aligned else values.copy()
    octets = np.frombuffer(raw, dtype=np.uint8)
    if octets.size and octets.max() > 1:
        raise InvalidInput(f"input '{tensor.name}' is BOOL: each byte must be 0 or 1")
    return octets.view(np.bool_)


def wrong_shape(name: str) -> ShapeWording:
    """The protocol's words for input ``name`` in a shape the model does not take (the
    service checks the shape: ``InferenceService.tensor_batch``)."""

    def wording(shape: tuple[int, ...], n_features: int | None) -> str:
        width = n_features if n_features is not None else -1
        return (
            f"input '{name}' has shape {list(shape)}, but the model takes "
            f"[{-1}, {width}]: one row of {n_features or 'n'} features per entry"
        )

    return wording


def only_input(inputs: tuple[Any, ...]) -> Any:
    """The single input; several inputs are refused (the model takes one matrix)."""
    if len(inputs) != 1:
        raise InvalidInput(
            f"the request has {len(inputs)} inputs, but the model takes one: send every "
            "feature in one input of shape [n_rows, n_features]"
        )
    return inputs[0]
