"""application/json: ``{"instances": [...]}`` (or bare rows) in, ``{"predictions": [...]}`` out.

It owns the request document's outer shape and the prediction objects; the instance forms
are parsed in ``codecs/instances.py``, shared with application/jsonlines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from smserve.budget import JSON_BYTES_PER_BYTE
from smserve.codecs.base import TEXT_PARAMETERS, UNNAMED, DecodeContext
from smserve.codecs.instances import batch_from_instances
from smserve.codecs.text import number_tokens, row_cells
from smserve.errors import DecodeError, InvalidInput
from smserve.media import JSON, MediaType
from smserve.types import Batch, Prediction

BOM = b"\xef\xbb\xbf"
_NUMPY = orjson.OPT_SERIALIZE_NUMPY


class JsonCodec:
    """Decodes and encodes ``application/json``.

    Decoding accepts ``{"instances": [instance, ...]}`` with the instance forms of
    ``codecs/instances.py``, the SageMaker SDK ``JSONSerializer``'s bare ``[[...], [...]]``,
    and a flat ``[...]`` as one row. Errors name the 0-based instance: ``instances[2]``.

    Encoding writes ``{"predictions": [{name: value, ...}, ...]}`` with names in Prediction
    order. Floats are promoted to float64 (``1.0``, ``0.7338520884513855``), vectors become
    lists (one list per class, a list of lists, for multi-class contributions), integers stay
    integers, booleans become 0/1; NaN and infinities are written as
    ``null`` so the body is strict JSON.

    With ``one_per_line`` (Batch Transform, ``SAGEMAKER_BATCH=true``) it writes one prediction
    object per line instead, so a response has exactly one line per input record and
    ``SplitType=Line``/``AssembleWith=Line`` (and ``JoinSource=Input``) line up whatever the
    Accept; each line is a JSON document, as with JSON Lines.
    """

    media_type = JSON
    chunked = False  # one document
    parameters = TEXT_PARAMETERS

    def __init__(self, one_per_line: bool = False) -> None:
        self.one_per_line = one_per_line

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        budget = context.budget.for_body(len(body))
        budget.check(JSON_BYTES_PER_BYTE * len(body), f"{JSON}: a {len(body)}-byte body")
        instances = _instances(parse_json(body.removeprefix(BOM), JSON))
        return batch_from_instances(instances, JSON, "instances[{}]".format, context, budget)

    def encode(self, prediction: Prediction) -> bytes:
        objects = prediction_objects(prediction)
        if self.one_per_line:
            return b"".join(line + b"\n" for line in objects)
        return b'{"predictions":[' + b",".join(objects) + b"]}"


def parse_json(text: bytes, media_type: str) -> Any:
    """orjson.loads, with its message in a DecodeError."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"{media_type}: invalid JSON: {exc}") from None


def _instances(document: Any) -> list[Any]:
    if isinstance(document, dict):
        if "instances" not in document:
            raise DecodeError(
                'application/json: expected {"instances": [...]} or a list of rows; '
                f"the object has {', '.join(map(repr, list(document)[:5])) or 'no members'}"
            )
        instances = document["instances"]
        if not isinstance(instances, list):
            raise DecodeError('application/json: "instances" must be a list')
    elif isinstance(document, list):
        rows = not document or isinstance(document[0], list | dict)
        instances = document if rows else [document]
    else:
        raise DecodeError('application/json: expected {"instances": [...]} or a list of rows')
    if not instances:
        raise InvalidInput("application/json: there are no instances; send at least one row")
    return instances


def prediction_objects(prediction: Prediction) -> list[bytes]:
    """Each row's outputs as the text of one JSON object, keys in Prediction order.

    Each output is formatted by one orjson call and the objects are filled in from a bytes
    template, so there is no per-row serialiser call.
    """
    if prediction.n_rows == 0:
        return []
    keys = (orjson.dumps(name).replace(b"%", b"%%") for name in prediction.names)
    template = b"{" + b",".join(key + b":%b" for key in keys) + b"}"
    columns = [_cells(array) for _, array in prediction.items()]
    return list(map(template.__mod__, zip(*columns, strict=True)))


def _cells(array: np.ndarray) -> list[bytes]:
    """One JSON value per row: a number, a list, or for (n, k, m) a list of k lists."""
    if array.ndim > 1 and array.dtype.kind == "f" and array.size:
        return _float_lists(array)
    return _nested(array, number_tokens(array))


def _float_lists(array: np.ndarray) -> list[bytes]:
    """The rows of a float vector output from one orjson call on the whole array (the same
    text as ``number_tokens``: float64, NaN and infinities as null), split between rows."""
    depth = array.ndim - 1
    text = orjson.dumps(np.ascontiguousarray(array, dtype=np.float64), option=_NUMPY)
    pieces = text[depth + 1 : -(depth + 1)].split(b"]" * depth + b",[" + b"[" * (depth - 1))
    return list(map((b"[" * depth + b"%b" + b"]" * depth).__mod__, pieces))


def _nested(array: np.ndarray, tokens: list[bytes]) -> list[bytes]:
    if array.ndim <= 2:
        return row_cells(array, tokens, b",", b"[%b]")
    inner = row_cells(array.reshape(-1, array.shape[-1]), tokens, b",", b"[%b]")
    return _nested(np.broadcast_to(np.float32(0), array.shape[:-1]), inner)
