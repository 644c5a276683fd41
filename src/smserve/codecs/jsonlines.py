"""application/jsonlines: one instance per line in, one prediction object per line out.

Instance forms are those of ``codecs/instances.py``; prediction objects are those of
``codecs/json.py``. This module only splits and joins lines.
"""

from __future__ import annotations

from itertools import compress

import numpy as np
import orjson

from smserve.codecs.base import TEXT_PARAMETERS, UNNAMED, DecodeContext
from smserve.codecs.instances import batch_from_instances
from smserve.codecs.json import BOM, parse_json, prediction_objects
from smserve.codecs.text import blank_line_error, first_interior_blank_line
from smserve.errors import DecodeError
from smserve.media import JSONLINES, MediaType
from smserve.types import Batch, Prediction

# JSON's cost, and each line's own objects (its bytes, its slot in each list): at most 62
# bytes per body byte measured, for lines of "[]" (bench/inprocess/decode_memory.py).
JSONLINES_BYTES_PER_BYTE = 64


class JsonLinesCodec:
    """Decodes and encodes ``application/jsonlines``.

    Decoding: each non-blank line is one instance (a bare row or an object with
    ``"features"`` or ``"data"``; forms may be mixed). Errors name the 1-based line. With
    ``records_per_line`` (batch mode) a blank line before the last record is a 400, since
    skipping it would misalign outputs with input lines.
    Encoding: one ``{name: value, ...}`` object per row, each line ``\\n``-terminated, values
    written as by the JSON codec (NaN and infinities as ``null``).
    """

    media_type = JSONLINES
    chunked = True  # lines
    parameters = TEXT_PARAMETERS

    def __init__(self, records_per_line: bool = False) -> None:
        self.records_per_line = records_per_line

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        budget = context.budget.for_body(len(body))
        budget.check(JSONLINES_BYTES_PER_BYTE * len(body), f"{JSONLINES}: a {len(body)}-byte body")
        lines = body.removeprefix(BOM).split(b"\n")
        nonblank = np.fromiter(map(bool, map(bytes.strip, lines)), dtype=bool, count=len(lines))
        if not nonblank.any():
            raise DecodeError("application/jsonlines: the body is empty; send one row per line")
        blank = first_interior_blank_line(nonblank) if self.records_per_line else None
        if blank is not None:
            raise blank_line_error(JSONLINES, blank)
        line_numbers = (np.flatnonzero(nonblank) + 1).tolist()
        instances = _parse_lines(list(compress(lines, nonblank)), line_numbers)
        return batch_from_instances(
            instances, JSONLINES, lambda i: f"line {line_numbers[i]}", context, budget
        )

    def encode(self, prediction: Prediction) -> bytes:
        objects = prediction_objects(prediction)
        return b"\n".join(objects) + b"\n" if objects else b""


def _parse_lines(lines: list[bytes], line_numbers: list[int]) -> list[object]:
    try:
        return list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        pass
    for line, number in zip(lines, line_numbers, strict=True):  # find the line that failed
        parse_json(line, f"application/jsonlines: line {number}")
    raise AssertionError("unreachable: a line failed to parse once but not twice")
