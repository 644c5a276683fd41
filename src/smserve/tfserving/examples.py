"""Classify and regress bodies: ``{"signature_name"?, "context"?, "examples": [...]}`` where
each example (and the context) maps feature names to a value or a list of values, as
tf.Example JSON. TF Serving's parse checks come first, with its messages:

* a number with a point or exponent (``NaN``, ``Infinity`` too) is a float; an integer token,
  ``true`` or ``false`` an int64; a string or ``{"b64": ...}`` bytes;
* one feature may not mix kinds (``[10, 10.0]`` fails: "expecting type: int64");
* null, nested lists and other objects are errors, and so is an integer above int64.

Then the examples become model rows (our rules): every feature must be one of the model's
(``Servable.feature_names``), hold exactly one number (int64 or float); a feature an example
leaves out is a missing value (NaN); context features apply to every example, and an
example's own value wins over the context's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from smserve.errors import InvalidInput
from smserve.tfserving.debugjson import debug_string, json_type_name
from smserve.tfserving.jsonparse import JsonDocument
from smserve.tfserving.predict import object_body, signature_name

INT64, FLOAT, BYTES = "int64", "float", "bytes"
Example = dict[str, tuple[str, list[Any]]]  # feature -> (kind, values)
_NAME_LIMIT = 20  # feature names listed in an error message


@dataclass(frozen=True, slots=True)
class ExamplesRequest:
    """A checked body. Examples that all name the same features with one number each are
    kept as one matrix (``names``, ``matrix``); any others as parsed examples."""

    signature_name: str
    context: Example
    count: int
    names: tuple[str, ...] = ()
    matrix: np.ndarray | None = None
    parsed: tuple[Example, ...] = ()


def parse_examples(document: JsonDocument, verb: str) -> ExamplesRequest:
    """Check a classify/regress body as TF Serving does; raises InvalidInput."""
    body = object_body(document)
    name = signature_name(body)
    context = to_example(body["context"]) if "context" in body else {}
    examples = body.get("examples")
    if "examples" not in body:
        raise InvalidInput(
            f"JSON Value: {debug_string(body)} When method is {verb}, key 'examples' is "
            "expected and was not found"
        )
    if not isinstance(examples, list):
        raise InvalidInput(
            f"JSON Value: {debug_string(body)} Expecting 'examples' value to be an list/array"
        )
    if not examples:
        raise InvalidInput(f"JSON Value: {debug_string(body)} 'examples' value is an empty array")
    fast = None if document.has_bool_tokens else _uniform(examples)
    if fast is not None:
        return ExamplesRequest(name, context, len(examples), fast[0], fast[1])
    parsed = tuple(to_example(example) for example in examples)
    return ExamplesRequest(name, context, len(examples), parsed=parsed)


def _uniform(examples: list[Any]) -> tuple[tuple[str, ...], np.ndarray] | None:
    """(names, matrix) when every example has the same features, each one number or a list
    of one number; None when only the exact walk can tell (it then raises TF's errors)."""
    if set(map(type, examples)) != {dict}:
        return None
    key_sets = set(map(frozenset, examples))
    if len(key_sets) != 1 or not (names := tuple(sorted(next(iter(key_sets))))):
        return None
    try:
        matrix = np.asarray(list(map(itemgetter(*names), examples)))
    except (ValueError, OverflowError):
        return None
    base = 1 if len(names) == 1 else 2
    one_each = matrix.ndim == base or (matrix.ndim == base + 1 and matrix.shape[-1] == 1)
    if matrix.dtype.kind not in "fi" or not one_each:
        return None
    return names, matrix.reshape(len(examples), len(names))


def to_example(value: Any) -> Example:
    """One tf.Example from its JSON object."""
    if not isinstance(value, dict):
        raise InvalidInput(f"Example must be JSON object but got JSON {json_type_name(value)}")
    example: Example = {}
    for name, content in value.items():
        kind = ""
        values = content if isinstance(content, list) else [content]
        for item in values:
            kind = _check_kind(name, kind, item)
        example[name] = (kind, values)
    return example


def _check_kind(name: str, kind: str, value: Any) -> str:
    found = _kind_of(name, value)
    if kind and found != kind:
        raise InvalidInput(f"Unexpected element type in feature: {name} expecting type: {kind}")
    return found


def _kind_of(name: str, value: Any) -> str:
    if value is None or isinstance(value, list) or _is_plain_object(value):
        raise InvalidInput(
            f"Feature: {name} has element with unexpected JSON type: {json_type_name(value)}"
        )
    if isinstance(value, bool):
        return INT64
    if isinstance(value, int):
        if value >= 2**63:
            raise InvalidInput(f"Feature: {name} has uint64_t element. Only int64_t is supported.")
        return INT64 if value >= -(2**63) else FLOAT
    return FLOAT if isinstance(value, float) else BYTES


def _is_plain_object(value: Any) -> bool:
    return isinstance(value, dict) and not (len(value) == 1 and isinstance(value.get("b64"), str))


def to_rows(request: ExamplesRequest, feature_index: Mapping[str, int]) -> np.ndarray:
    """The examples as a float32 matrix of shape (n_examples, n_features); NaN where absent."""
    rows = np.full((request.count, len(feature_index)), np.nan, dtype=np.float32)
    with np.errstate(over="ignore"):  # beyond float32 range is an infinity
        for name, (kind, values) in request.context.items():
            rows[:, _column(name, feature_index)] = _one_number(name, kind, values)
        if request.matrix is not None:
            rows[:, [_column(name, feature_index) for name in request.names]] = request.matrix
        for index, example in enumerate(request.parsed):
            _fill_row(rows, index, example, feature_index)
    return rows


def _fill_row(rows: np.ndarray, row: int, example: Example, index: Mapping[str, int]) -> None:
    for name, (kind, values) in example.items():
        rows[row, _column(name, index)] = _one_number(name, kind, values)


def _column(name: str, index: Mapping[str, int]) -> int:
    column = index.get(name)
    if column is None:
        raise InvalidInput(
            f"Feature: {name} is not a feature of this model; its features are "
            f"{_names(list(index))}"
        )
    return column


def _names(names: Sequence[str]) -> str:
    shown = ",".join(names[:_NAME_LIMIT])
    return shown + (f",... ({len(names)} in all)" if len(names) > _NAME_LIMIT else "")


def _one_number(name: str, kind: str, values: list[Any]) -> float:
    if kind == BYTES:
        raise InvalidInput(
            f"Feature: {name} holds bytes; this model's features are numbers (int64 or float)"
        )
    if len(values) != 1:
        raise InvalidInput(
            f"Feature: {name} has {len(values)} values; each feature of this model takes one"
        )
    return float(values[0])
