"""Batch Transform's ``JoinSource=Input``: each answer line joined to its input record.

CSV input: the input row, a comma, then the answer's values. JSON Lines (or line-split JSON)
input: the answer object added to the input object under ``SageMakerOutput``; an input that
is not an object (a bare row) is wrapped as ``{"SageMakerInput": ..., "SageMakerOutput":
...}``. Joined JSON is re-serialised compactly with orjson, input keys first."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import orjson

from smserve.errors import ConfigError
from smserve.media import CSV, JSON, JSONLINES

JSON_TYPES = (JSON, JSONLINES)

Joiner = Callable[[Sequence[bytes], Sequence[bytes]], list[bytes]]


def joiner(input_type: str, output_type: str) -> Joiner:
    """The join for these canonical media types; raises ConfigError for other pairs."""
    if input_type == CSV and output_type == CSV:
        return join_csv
    if input_type in JSON_TYPES and output_type in JSON_TYPES:
        return join_json
    raise ConfigError(
        f"--join-source Input joins text/csv input with text/csv output, or JSON (Lines) input "
        f"with JSON (Lines) output; not {input_type} with {output_type}"
    )


def join_csv(inputs: Sequence[bytes], outputs: Sequence[bytes]) -> list[bytes]:
    """``inputs`` are records with their newline; ``outputs`` are answer lines without."""
    return [
        record.rstrip(b"\r\n") + b"," + answer
        for record, answer in zip(inputs, outputs, strict=True)
    ]


def join_json(inputs: Sequence[bytes], outputs: Sequence[bytes]) -> list[bytes]:
    return [_join_one(record, answer) for record, answer in zip(inputs, outputs, strict=True)]


def _join_one(record: bytes, answer: bytes) -> bytes:
    source, output = orjson.loads(record), orjson.loads(answer)
    if isinstance(source, dict):
        return orjson.dumps({**source, "SageMakerOutput": output})
    return orjson.dumps({"SageMakerInput": source, "SageMakerOutput": output})
