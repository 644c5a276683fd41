"""A checked JSON model handed to XGBoost as UBJSON: the document ``validation`` has already
parsed and checked, written back in the form XGBoost writes itself (each tree's node arrays as
typed arrays), which XGBoost reads about thirty times faster than it parses the JSON text. So
the parse the checks need is not a second parse: it replaces XGBoost's.

Exact or not at all. The integer arrays are the checked ones (``TreeArrays``). A JSON number
reaches Python as the float64 nearest its text, and rounding that to float32 gives the float32
nearest the text (what XGBoost's own reader keeps) except where the float64 falls exactly
halfway between two float32 values, or outside float32's normal range: a document holding
such a number, anywhere, is handed to XGBoost as the JSON it was. So is any document that is
not a plain forest of ``gbtree`` or ``dart`` trees (vector leaves, categorical splits,
``gblinear``): XGBoost parses those itself, after the checks.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from smserve.algorithms.xgboost.tree_checks import TreeArrays
from smserve.algorithms.xgboost.ubjson_writer import encode

FLOAT_KEYS = ("split_conditions", "loss_changes", "sum_hessian", "base_weights")
_EMPTY = {
    "categories": np.zeros(0, np.int32),
    "categories_nodes": np.zeros(0, np.int32),
    "categories_segments": np.zeros(0, np.int64),
    "categories_sizes": np.zeros(0, np.int64),
}
_INT32 = np.iinfo(np.int32)
_DROPPED = np.uint64((1 << 29) - 1)  # the float64 mantissa bits a float32 does not keep
_HALFWAY = np.uint64(1 << 28)
_NORMAL = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)


class NotExact(Exception):
    """The document holds a value UBJSON would not carry exactly as XGBoost reads its JSON."""


def reencoded(document: dict[str, Any], forest: TreeArrays) -> bytes | None:
    """``document`` (a checked JSON model whose trees ``forest`` holds) as UBJSON, or None
    where the module doc says XGBoost should parse the JSON itself."""
    holder = _tree_holder(document)
    if holder is None:
        return None
    trees = holder["trees"]
    try:
        columns = _columns(trees, forest)
        _check_floats(_outside_trees(document, holder))
    except NotExact:
        return None
    holder_copy = holder | {"trees": list(_typed_trees(trees, columns, forest))}
    return encode(_replaced(document, holder, holder_copy))


def _tree_holder(document: dict[str, Any]) -> dict[str, Any] | None:
    """The object holding the trees (``gradient_booster.model``; dart's ``gbtree.model``)."""
    booster = document["learner"]["gradient_booster"]
    name = booster.get("name")
    if name not in ("gbtree", "dart"):
        return None
    holder: dict[str, Any] = (booster["gbtree"] if name == "dart" else booster)["model"]
    return holder


def _columns(trees: list[dict[str, Any]], forest: TreeArrays) -> dict[str, np.ndarray]:
    """Every node array of the forest, joined, as the typed arrays XGBoost writes."""
    if not all(key in tree for tree in trees for key in (*FLOAT_KEYS, "default_left")):
        raise NotExact()
    total = forest.n_nodes
    columns = {key: _float32(_joined(trees, key, total)) for key in FLOAT_KEYS}
    columns["default_left"] = _flags(_joined(trees, "default_left", total))
    for key, values in (
        ("left_children", forest.left),
        ("right_children", forest.right),
        ("parents", forest.parents),
        ("split_indices", forest.features),
    ):
        columns[key] = _int32(values)
    columns["split_type"] = forest.split_type.astype(np.uint8)
    return columns


def _joined(trees: list[dict[str, Any]], key: str, total: int) -> np.ndarray:
    values = itertools.chain.from_iterable(tree[key] for tree in trees)
    try:
        return np.fromiter(values, dtype=np.float64, count=total)
    except (TypeError, ValueError):
        raise NotExact() from None


def _float32(values: np.ndarray) -> np.ndarray:
    _check_floats(values)
    return values.astype(np.float32)


def _check_floats(values: np.ndarray) -> None:
    """Raise NotExact unless rounding each float64 to float32 rounds it as its text would."""
    narrowed = values.astype(np.float32).astype(np.float64)
    inexact = values[(narrowed != values) & np.isfinite(values)]
    if not inexact.size:
        return
    magnitude = np.abs(inexact)
    halfway = (inexact.view(np.uint64) & _DROPPED) == _HALFWAY
    if np.any(halfway | (magnitude < _NORMAL[0]) | (magnitude > _NORMAL[1])):
        raise NotExact()


def _flags(values: np.ndarray) -> np.ndarray:
    if np.any((values != 0) & (values != 1)):
        raise NotExact()
    return values.astype(np.uint8)


def _int32(values: np.ndarray) -> np.ndarray:
    if values.size and (values.min() < _INT32.min or values.max() > _INT32.max):
        raise NotExact()
    return values.astype(np.int32)


def _typed_trees(
    trees: list[dict[str, Any]], columns: dict[str, np.ndarray], forest: TreeArrays
) -> Iterator[dict[str, Any]]:
    """Each tree with its node arrays as slices of ``columns`` (its other members kept)."""
    assert forest.starts is not None
    bounds = forest.starts.tolist()
    for index, tree in enumerate(trees):
        start, end = bounds[index], bounds[index + 1]
        arrays = {key: column[start:end] for key, column in columns.items()}
        yield tree | _EMPTY | arrays


def _outside_trees(document: Any, holder: dict[str, Any]) -> np.ndarray:
    """Every float of the document outside the trees (dart's weights, for one)."""
    found = [value for value in _floats(document, holder["trees"]) if isinstance(value, float)]
    return np.array(found, dtype=np.float64)


def _floats(value: Any, skipped: object) -> Iterator[Any]:
    if value is skipped:
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from _floats(item, skipped)
    elif isinstance(value, list):
        for item in value:
            yield from _floats(item, skipped)
    else:
        yield value


def _replaced(value: Any, old: object, new: Any) -> Any:
    """``value`` with the object ``old`` replaced by ``new`` (only the path to it copied)."""
    if value is old:
        return new
    if isinstance(value, dict):
        return {key: _replaced(item, old, new) for key, item in value.items()}
    return value
