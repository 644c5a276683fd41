"""The protocol's tensor datatypes and the numpy dtypes they travel as (little-endian, the
byte order of Triton's binary tensor extension).

Inputs may be any numeric or ``BOOL`` type; the model computes in float32. ``FP16`` and
``BYTES`` are refused with a message saying what to send instead.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from smserve.errors import InvalidInput

DTYPES: Mapping[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype("<u1"),
    "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"),
    "INT8": np.dtype("<i1"),
    "INT16": np.dtype("<i2"),
    "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"),
    "FP32": np.dtype("<f4"),
    "FP64": np.dtype("<f8"),
}
_NAMES: Mapping[np.dtype, str] = {dtype: name for name, dtype in DTYPES.items()}
UNSUPPORTED: Mapping[str, str] = {
    "FP16": "FP16 is not accepted: send FP32 (the model computes in float32)",
    "BF16": "BF16 is not accepted: send FP32 (the model computes in float32)",
    "BYTES": "BYTES is not accepted: features are numbers; send FP32",
}
MODEL_DATATYPE = "FP32"  # what every model here takes as input


def input_dtype(datatype: object, name: str) -> np.dtype:
    """The numpy dtype of input ``name``'s ``datatype``; raises InvalidInput."""
    dtype = DTYPES.get(datatype) if isinstance(datatype, str) else None
    if dtype is not None:
        return dtype
    if isinstance(datatype, str) and datatype in UNSUPPORTED:
        raise InvalidInput(f"input '{name}': datatype {UNSUPPORTED[datatype]}")
    raise InvalidInput(
        f"input '{name}': unknown datatype {datatype!r}; use one of {', '.join(DTYPES)}"
    )


def datatype_of(dtype: np.dtype) -> str:
    """The protocol's name for an output's dtype (any byte order)."""
    return _NAMES[dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype]


def little_endian(values: np.ndarray) -> np.ndarray:
    """``values`` C-contiguous and little-endian: the byte layout of binary (raw) tensors."""
    dtype = values.dtype.newbyteorder("<") if values.dtype.itemsize > 1 else values.dtype
    return np.ascontiguousarray(values, dtype=dtype)
