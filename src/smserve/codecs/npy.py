"""application/x-npy: one NumPy ``.npy`` array in, the predictions as one ``.npy`` out.

What the SageMaker SDK's ``NumpySerializer`` sends (``np.save`` bytes; v2's default
serializer, and v3 ``ModelBuilder``'s health check for a NumPy sample) and what its
``NumpyDeserializer`` reads back.

Decoding reads the header itself (``numpy.lib.format``, header size bounded, never a pickle):
a 2-D array is rows of features, a 1-D array is one row. The dtype must be a plain number
(bool, integer or float, either byte order); object, string, structured, complex, datetime and
sub-array dtypes are refused. The declared shape is charged to the request's memory budget
(the float32 batch it becomes, the only allocation; none when the body already holds aligned
row-major little-endian float32) before anything is read, and the body must hold exactly the
bytes the header declares. Fortran-order arrays are read in their own order
and made row-major.

Encoding writes what the CSV encoder writes, as numbers: a single scalar output is an (n,)
array, otherwise an (n, k) array of every output's values in CSV's column order (the outputs
named in ``Prediction.columns`` last), in the outputs' common dtype (float32 for k-means' two
outputs and for XGBoost's scores).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.lib.format as npy_format

from smserve.codecs.base import UNNAMED, DecodeContext
from smserve.errors import DecodeError, NotAcceptable
from smserve.media import NPY, MediaType
from smserve.types import Batch, FloatArray, Prediction

MAX_HEADER_BYTES = 10_000  # numpy's own default bound for a header it will parse
_NUMERIC_KINDS = "biuf"
_READERS = {
    (1, 0): npy_format.read_array_header_1_0,
    (2, 0): npy_format.read_array_header_2_0,
    (3, 0): npy_format.read_array_header_2_0,  # 2.0 with a UTF-8 header: ASCII for numbers
}


class NpyCodec:
    """Decodes and encodes ``application/x-npy``; it takes no parameters."""

    media_type = NPY
    chunked = False  # one header, then the values
    parameters: Mapping[str, frozenset[str] | None] = MappingProxyType({})

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        stream = io.BytesIO(body)
        shape, fortran, dtype = _header(stream)
        rows, columns = _matrix_shape(shape)
        budget = context.budget.for_body(len(body))
        budget.check(4 * rows * columns, f"{NPY}: a {rows} x {columns} array")
        values = _values(body, stream.tell(), dtype, rows * columns)
        matrix = values.reshape((columns, rows)).T if fortran else values.reshape(rows, columns)
        with np.errstate(over="ignore"):  # beyond float32's range -> inf, refused by the service
            features: FloatArray = np.ascontiguousarray(matrix, dtype=np.float32)
        # Row-major little-endian float32 is the body itself (read only, no copy), unless a
        # header of odd length leaves it misaligned: XGBoost refuses such a pointer.
        return Batch(features if features.flags.aligned else features.copy())

    def encode(self, prediction: Prediction) -> bytes:
        buffer = io.BytesIO()
        npy_format.write_array(buffer, _answer(prediction), allow_pickle=False)
        return buffer.getvalue()


def _header(stream: io.BytesIO) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """(shape, fortran_order, dtype) from the header; raises DecodeError."""
    try:
        version = npy_format.read_magic(stream)
        reader = _READERS.get(version)
        if reader is None:
            raise DecodeError(f"{NPY}: .npy format version {version} is not supported")
        shape, fortran, dtype = reader(stream, max_header_size=MAX_HEADER_BYTES)
    except DecodeError:
        raise
    except Exception as exc:  # any: see below
        # No magic, a truncated, oversized or malformed header. numpy evaluates the header's
        # dict with ast.literal_eval, so a mangled one raises whatever the tokenizer, the
        # parser or the comparison of its keys raises (ValueError, SyntaxError, TokenError,
        # TypeError, RecursionError: found by bench/fuzz, each a 500 before); the header is
        # at most MAX_HEADER_BYTES, so nothing else is at stake here.
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DecodeError(f"{NPY}: the body is not a readable .npy array: {reason}") from None
    return tuple(shape), bool(fortran), _numeric(dtype)


def _numeric(dtype: np.dtype[Any]) -> np.dtype[Any]:
    plain = not (dtype.hasobject or dtype.names is not None or dtype.subdtype is not None)
    if not plain or dtype.kind not in _NUMERIC_KINDS:
        raise DecodeError(
            f"{NPY}: arrays of dtype {dtype.str!r} are not accepted; send numbers (bool, "
            "integer or float)"
        )
    return dtype


def _matrix_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, columns): a 1-D array is one row; raises DecodeError for other ranks."""
    if len(shape) not in (1, 2):
        raise DecodeError(
            f"{NPY}: the array has shape {shape}; send a 2-D array (rows of features) or a "
            "1-D array (one row)"
        )
    rows, columns = (1, shape[0]) if len(shape) == 1 else shape
    if rows < 1 or columns < 1:
        raise DecodeError(f"{NPY}: the array has shape {shape}; send at least one value")
    return rows, columns


def _values(body: bytes, start: int, dtype: np.dtype[Any], count: int) -> np.ndarray:
    """The ``count`` values after the header, without copying; raises DecodeError unless the
    body holds exactly them."""
    needed, present = count * dtype.itemsize, len(body) - start
    if present != needed:
        state = "is truncated" if present < needed else "has extra bytes"
        raise DecodeError(
            f"{NPY}: the body {state}: the header declares {count} values of {dtype.str!r} "
            f"({needed} bytes), {present} bytes follow it"
        )
    return np.frombuffer(body, dtype=dtype, count=count, offset=start)


def _answer(prediction: Prediction) -> np.ndarray:
    """The predictions as one array: (n,) for one scalar output, else (n, k) in CSV's order."""
    names = [name for name in prediction.names if name not in prediction.columns]
    arrays = [prediction.outputs[name] for name in [*names, *prediction.columns]]
    for name, array in zip([*names, *prediction.columns], arrays, strict=True):
        if array.dtype.kind not in _NUMERIC_KINDS:
            raise NotAcceptable(
                f"output {name!r} holds {array.dtype} values; {NPY} carries numbers"
            )
    if len(arrays) == 1 and arrays[0].ndim == 1:
        return arrays[0]
    blocks = [array.reshape(len(array), math.prod(array.shape[1:])) for array in arrays]
    return np.concatenate(blocks, axis=1, dtype=np.result_type(*arrays))
