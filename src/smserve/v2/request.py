"""Inference request bodies: the JSON header, and the binary tensors after it (Triton's binary
tensor data extension: ``Inference-Header-Content-Length`` gives the JSON's size, each binary
input its ``parameters.binary_data_size``, in input order).

Only the request's shape is checked here (types of ``id``, ``parameters``, ``inputs`` and
``outputs``); tensor contents are decoded by ``tensors``. Every mistake is an InvalidInput
naming the field to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from smserve.errors import InvalidInput

HEADER_LENGTH = "Inference-Header-Content-Length"


@dataclass(frozen=True, slots=True)
class InputTensor:
    """One entry of ``inputs``: ``data`` is the JSON ``data`` (a list), the raw bytes of a
    binary input (a memoryview) or typed values already read (an ndarray, from gRPC's
    ``contents``). ``raw_field`` is what the client calls raw bytes' size, for messages."""

    name: str
    shape: tuple[int, ...]
    datatype: object
    data: Any
    raw_field: str = "binary_data_size"


@dataclass(frozen=True, slots=True)
class RequestedOutput:
    name: str
    binary: bool


@dataclass(frozen=True, slots=True)
class InferRequest:
    """A parsed request; ``outputs`` None means the model's default outputs, each binary when
    ``binary_output`` (the request's ``binary_data_output``)."""

    id: str | None
    inputs: tuple[InputTensor, ...]
    outputs: tuple[RequestedOutput, ...] | None
    binary_output: bool


def parse_request(body: bytes, header_length: str | None) -> InferRequest:
    """The request in ``body``; ``header_length`` is the Inference-Header-Content-Length
    header (None: the whole body is JSON)."""
    split = _split(body, header_length)
    document = _object(_json(body[:split]), "the inference request")
    parameters = _parameters(document.get("parameters"), "the request")
    binary_output = flag(parameters, "binary_data_output", "the request")
    inputs = _inputs(document.get("inputs"), memoryview(body)[split:])
    return InferRequest(
        _request_id(document.get("id")),
        inputs,
        _outputs(document.get("outputs"), binary_output),
        binary_output,
    )


def _split(body: bytes, header_length: str | None) -> int:
    if header_length is None:
        return len(body)
    text = header_length.strip()
    if not (text.isascii() and text.isdigit()) or int(text) > len(body):
        raise InvalidInput(
            f"{HEADER_LENGTH} must be the size in bytes of the JSON at the start of the body "
            f"(0 to {len(body)}), got {header_length!r}"
        )
    return int(text)


def _json(text: bytes) -> Any:
    if not text.strip():
        raise InvalidInput("the request body is empty: send an inference request JSON object")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidInput(f"the inference request is not valid JSON: {exc}") from None


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} must be a JSON object")
    return value


def _request_id(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput("'id' must be a string")
    return value


def _parameters(value: Any, where: str) -> Mapping[str, Any]:
    """A ``parameters`` object: values are strings, numbers or booleans (the spec's)."""
    if value is None:
        return {}
    params = _object(value, f"'parameters' of {where}")
    for key, item in params.items():
        if not isinstance(item, str | int | float | bool):
            raise InvalidInput(f"parameter '{key}' of {where} must be a string, number or boolean")
    return params


def flag(parameters: Mapping[str, Any], key: str, where: str, default: bool = False) -> bool:
    value = parameters.get(key, default)
    if not isinstance(value, bool):
        raise InvalidInput(f"parameter '{key}' of {where} must be true or false")
    return value


def _inputs(value: Any, binary: memoryview) -> tuple[InputTensor, ...]:
    if not isinstance(value, list) or not value:
        raise InvalidInput("'inputs' must be a non-empty list of input tensors")
    inputs = []
    offset = 0
    for index, item in enumerate(value):
        tensor, size = _input(_object(item, f"inputs[{index}]"), index, binary[offset:])
        inputs.append(tensor)
        offset += size
    if offset != len(binary):
        raise InvalidInput(
            f"the body has {len(binary) - offset} bytes after the JSON header that no input's "
            "'binary_data_size' claims; check the sizes and the "
            f"{HEADER_LENGTH} header"
        )
    return tuple(inputs)


def _input(item: dict[str, Any], index: int, binary: memoryview) -> tuple[InputTensor, int]:
    """The input and how many binary bytes it takes."""
    name = item.get("name")
    if not isinstance(name, str):
        raise InvalidInput(f"inputs[{index}] needs a 'name' (a string)")
    where = f"input '{name}'"
    shape = shape_of(item.get("shape"), where)
    size = _binary_size(_parameters(item.get("parameters"), where), where)
    if size is None:
        if "data" not in item:
            raise InvalidInput(f"{where} needs 'data' (or a binary_data_size parameter)")
        return InputTensor(name, shape, item.get("datatype"), item["data"]), 0
    if "data" in item:
        raise InvalidInput(f"{where} has both 'data' and binary_data_size: send one of them")
    if size > len(binary):
        raise InvalidInput(
            f"{where}: binary_data_size is {size}, but only {len(binary)} bytes of binary "
            f"data are left in the body; check the {HEADER_LENGTH} header"
        )
    return InputTensor(name, shape, item.get("datatype"), binary[:size]), size


def shape_of(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(_is_size(d) for d in value):
        raise InvalidInput(f"{where}: 'shape' must be a list of non-negative integers")
    return tuple(value)


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _binary_size(parameters: Mapping[str, Any], where: str) -> int | None:
    size = parameters.get("binary_data_size")
    if size is None:
        return None
    if not _is_size(size):
        raise InvalidInput(f"{where}: binary_data_size must be a non-negative integer")
    return int(size)


def _outputs(value: Any, binary_output: bool) -> tuple[RequestedOutput, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidInput("'outputs' must be a list of {\"name\": ...} objects")
    outputs = tuple(
        _output(_object(v, f"outputs[{i}]"), i, binary_output) for i, v in enumerate(value)
    )
    names = [output.name for output in outputs]
    if len(set(names)) != len(names):
        raise InvalidInput(f"'outputs' names an output twice: {', '.join(names)}")
    return outputs


def _output(item: dict[str, Any], index: int, binary_output: bool) -> RequestedOutput:
    name = item.get("name")
    if not isinstance(name, str):
        raise InvalidInput(f"outputs[{index}] needs a 'name' (a string)")
    parameters = _parameters(item.get("parameters"), f"output '{name}'")
    return RequestedOutput(name, flag(parameters, "binary_data", f"output '{name}'", binary_output))
