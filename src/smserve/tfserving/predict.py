"""Predict request bodies: ``{"signature_name"?, "instances": [...]}`` (row format) or
``{"signature_name"?, "inputs": ...}`` (columnar format), decoded with TF Serving's checks and
messages, in its order, into one float32 tensor per signature input.

Row format: the first element decides between a list of objects (one key per input) and
plain values (one input only); each element is one row, and every row must have the first
row's shape. Columnar format: one value for a one-input signature, else an object with every
input (extra keys ignored); there is no implicit batch dimension.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from smserve.errors import InvalidInput
from smserve.tfserving.debugjson import debug_string
from smserve.tfserving.jsonparse import JsonDocument
from smserve.tfserving.signatures import Signature
from smserve.tfserving.tensors import float_tensor, numpy_tensor, shape_text

Tensors = dict[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class PredictInputs:
    """Decoded inputs; ``row_format`` is True for ``instances`` (answered as predictions)."""

    tensors: Tensors
    row_format: bool


def object_body(document: JsonDocument) -> dict[str, Any]:
    """The top-level object; raises InvalidInput when the body is not one."""
    if not isinstance(document.value, dict):
        raise InvalidInput(f"JSON Value: {debug_string(document.value)} Is not object")
    return document.value


def signature_name(body: Mapping[str, Any]) -> str:
    """The requested signature name ('' when absent)."""
    name = body.get("signature_name", "")
    if not isinstance(name, str):
        raise InvalidInput(
            f"JSON Value: {debug_string(body)} not formatted correctly. "
            "'signature_name' key must be a string value."
        )
    return name


def decode_inputs(document: JsonDocument, signature: Signature) -> PredictInputs:
    """The tensors of a predict body for ``signature``'s inputs (all DT_FLOAT here)."""
    body = object_body(document)
    names = sorted(signature.inputs)
    bools = document.has_bool_tokens
    if "instances" in body:
        if "inputs" in body:
            raise InvalidInput(
                f"JSON Value: {debug_string(body)} Not formatted correctly expecting only "
                "one of 'inputs' or 'instances' keys to exist "
            )
        return PredictInputs(_rows(body, names, bools), row_format=True)
    if "inputs" in body:
        return PredictInputs(_columns(body["inputs"], names, bools), row_format=False)
    raise InvalidInput("Missing 'inputs' or 'instances' key")


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def _is_named(value: Any) -> bool:
    return isinstance(value, dict) and not _is_b64(value)


def _rows(body: dict[str, Any], names: list[str], bools: bool) -> Tensors:
    instances = body["instances"]
    if not isinstance(instances, list):
        raise InvalidInput(
            f"JSON Value: {debug_string(body)} Expecting 'instances' to be an list/array"
        )
    if not instances:
        raise InvalidInput(f"JSON Value: {debug_string(body)} No values in 'instances' array")
    if not isinstance(instances[0], dict) and len(names) > 1:
        raise InvalidInput(
            "instances is a plain list, but expecting list of objects as multiple input "
            "tensors required as per tensorinfo_map"
        )
    named = _is_named(instances[0])
    fast = None if bools else _fast_rows(instances, names, named)
    return fast if fast is not None else _exact_rows(instances, names, named, bools)


def _fast_rows(instances: list[Any], names: list[str], named: bool) -> Tensors | None:
    """One numpy conversion for the whole batch, or None when only the exact walk can tell."""
    types = set(map(type, instances))
    if named:
        if len(names) != 1 or types != {dict} or set(map(len, instances)) != {1}:
            return None
        try:
            instances = list(map(itemgetter(names[0]), instances))
        except KeyError:
            return None
    elif dict in types:
        return None
    tensor = numpy_tensor(instances)
    return None if tensor is None else {names[0]: tensor}


class _Batcher:
    """Rows per input name; each row must match the first row's size and shape."""

    def __init__(self, bools: bool) -> None:
        self.bools = bools
        self.rows: dict[str, list[np.ndarray]] = {}

    def add(self, name: str, value: Any) -> None:
        tensor = float_tensor(value, self.bools)
        rows = self.rows.setdefault(name, [])
        if rows:
            _check_same_shape(rows[0], tensor)
        rows.append(tensor)

    def tensors(self) -> Tensors:
        return {name: np.stack(rows) for name, rows in self.rows.items()}


def _exact_rows(instances: list[Any], names: list[str], named: bool, bools: bool) -> Tensors:
    """Element by element, as TF Serving walks them (the slow path, exact errors)."""
    batcher = _Batcher(bools)
    for index, item in enumerate(instances):
        if named:
            _add_named(batcher, item, index, names)
        elif _is_named(item):
            raise InvalidInput(f"Expecting value/list but got object at item {index} of input list")
        else:
            _add(batcher, names[0], item, f"Failed to process element: {index} of 'instances' list")
    return batcher.tensors()


def _add_named(batcher: _Batcher, item: Any, index: int, names: list[str]) -> None:
    if not _is_named(item):
        raise InvalidInput(f"Expecting object but got list at item {index} of input list")
    for key, value in item.items():
        where = f"Failed to process element: {index} key: {key} of 'instances' list"
        if key not in names:
            raise InvalidInput(
                f"{where}. Error: INVALID_ARGUMENT: JSON object: does not have named input: {key}"
            )
        _add(batcher, key, value, where)
    if set(item) != set(names):
        raise InvalidInput(
            f"Failed to process element: {index} of 'instances' list. JSON object: "
            f"{debug_string(item)} keys must be equal to: {','.join(names)}"
        )


def _add(batcher: _Batcher, name: str, value: Any, where: str) -> None:
    try:
        batcher.add(name, value)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}. Error: INVALID_ARGUMENT: {exc.message}") from None


def _check_same_shape(first: np.ndarray, row: np.ndarray) -> None:
    if row.size != first.size:
        raise InvalidInput(f"Expecting tensor size: {first.size} but got: {row.size}")
    if row.shape != first.shape:
        raise InvalidInput(
            f"Expecting shape {shape_text(first.shape)} but got: {shape_text(row.shape)}"
        )


def _columns(value: Any, names: list[str], bools: bool) -> Tensors:
    if not _is_named(value):
        if len(names) > 1:
            raise InvalidInput(
                "inputs is a plain value/list, but expecting an object as multiple input "
                "tensors required as per tensorinfo_map"
            )
        return {names[0]: float_tensor(value, bools)}
    tensors = {}
    for name in names:
        if name not in value:
            raise InvalidInput(f"Missing named input: {name} in 'inputs' object.")
        tensors[name] = float_tensor(value[name], bools)
    return tensors
