"""Response bodies: ``$inference_response`` (JSON, or JSON then binary tensors), metadata,
readiness and the ``{"error": "..."}`` envelope.

A binary output is written as its little-endian bytes after the JSON, in output order, with
``parameters.binary_data_size``; the reply then carries ``Inference-Header-Content-Length``
and ``application/octet-stream``, as Triton's are. JSON ``data`` is always flat (row-major).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from smserve.media import JSON, OCTET_STREAM
from smserve.v2.datatypes import datatype_of, little_endian
from smserve.v2.infer import OutputTensor
from smserve.v2.request import HEADER_LENGTH


@dataclass(frozen=True, slots=True)
class Body:
    """An encoded body, its Content-Type and extra headers."""

    data: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...] = ()


def json_body(document: Any) -> Body:
    return Body(orjson.dumps(document), JSON)


def error_body(message: str) -> bytes:
    return orjson.dumps({"error": message})


def infer_body(
    model: str, version: int, request_id: str | None, outputs: Sequence[OutputTensor]
) -> Body:
    """``$inference_response`` for ``outputs``, in order."""
    document: dict[str, Any] = {"model_name": model, "model_version": str(version)}
    if request_id is not None:
        document["id"] = request_id
    document["outputs"] = [_output(tensor) for tensor in outputs]
    header = orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)
    binary = [little_endian(t.values).tobytes() for t in outputs if t.binary]
    if not binary:
        return Body(header, JSON)
    headers = ((HEADER_LENGTH, str(len(header))),)
    return Body(b"".join((header, *binary)), OCTET_STREAM, headers)


def _output(tensor: OutputTensor) -> dict[str, Any]:
    values = tensor.values
    entry: dict[str, Any] = {
        "name": tensor.name,
        "datatype": datatype_of(values.dtype),
        "shape": list(values.shape),
    }
    if tensor.binary:
        entry["parameters"] = {"binary_data_size": values.nbytes}
    else:
        entry["data"] = np.ascontiguousarray(values).reshape(-1)
    return entry
