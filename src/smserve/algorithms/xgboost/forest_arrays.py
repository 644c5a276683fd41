"""All of a model's trees' integer node arrays at once, for ``tree_checks``: one conversion per
array kind for the whole forest instead of one per tree (a JSON list of every tree's children
is read in one ``np.fromiter``; UBJSON's typed arrays are joined in one ``bytes.join``),
which keeps the load-time checks of a 1,000-tree model to a few hundredths of a second.

Only for plain forests, the models nearly everyone serves: scalar leaves, no categorical
splits and every array present; anything else is checked tree by tree."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from smserve.algorithms.xgboost.document_fields import length
from smserve.algorithms.xgboost.tree_checks import Categories, InvalidTree, TreeArrays
from smserve.algorithms.xgboost.ubjson import TYPED_ARRAYS, typed_format

INTEGER_KEYS = ("left_children", "right_children", "parents", "split_indices", "split_type")
OTHER_KEYS = ("split_conditions", "loss_changes", "sum_hessian", "default_left")
EXACT_ARRAYS = frozenset((list, *TYPED_ARRAYS))  # types of arrays (the fast check)
LARGEST = 2.0**53  # whole numbers a float64 holds exactly


def plain_forest(trees: list[dict[str, Any]], sizes: list[int]) -> TreeArrays | None:
    """The joined arrays of ``trees`` (of ``sizes`` nodes each, as declared), or None when a
    tree is not plain; raises InvalidTree (naming the tree) for an array of another length
    or of non-integers."""
    if not all(_plain(tree) for tree in trees):
        return None
    for key in (*INTEGER_KEYS, *OTHER_KEYS):
        _check_lengths(trees, sizes, key)
    if all("base_weights" in tree for tree in trees):
        _check_lengths(trees, sizes, "base_weights")
    total = sum(sizes)
    left, right, parents, features, kinds = (_joined(trees, key, total) for key in INTEGER_KEYS)
    none = np.zeros(0, dtype=np.int64)
    starts = np.cumsum([0, *sizes])
    empty = Categories(none, none, none, none)
    return TreeArrays(left, right, parents, features, kinds, empty, None, starts)


def _plain(tree: dict[str, Any]) -> bool:
    param = tree.get("tree_param")
    width = param.get("size_leaf_vector", "1") if isinstance(param, dict) else None
    categories = tree.get("categories_nodes", ())
    has_all = all(key in tree for key in INTEGER_KEYS)
    return (
        has_all
        and str(width) in ("0", "1")
        and hasattr(categories, "__len__")
        and not len(categories)
    )


def _check_lengths(trees: list[dict[str, Any]], sizes: list[int], key: str) -> None:
    if [len(v) if type(v) in EXACT_ARRAYS else -1 for v in _members(trees, key)] == sizes:
        return  # the usual case, in one pass
    for index, (tree, size) in enumerate(zip(trees, sizes, strict=True)):
        found = length(tree.get(key))
        if found != size:
            entries = "no" if found is None else found
            raise InvalidTree(None, f"{key} has {entries} entries for {size} nodes", tree=index)


def _members(trees: list[dict[str, Any]], key: str) -> Iterator[Any]:
    return (tree.get(key) for tree in trees)


def _joined(trees: list[dict[str, Any]], key: str, total: int) -> np.ndarray:
    values = [tree[key] for tree in trees]
    if all(isinstance(value, TYPED_ARRAYS) for value in values):
        return _joined_typed(trees, values, key)
    try:
        flat = np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64, count=total)
    except (TypeError, ValueError):
        raise _not_integers(trees, key) from None
    if not np.all((np.abs(flat) < LARGEST) & (flat == np.trunc(flat))):
        raise _not_integers(trees, key)
    return flat.astype(np.int64)


def _joined_typed(trees: list[dict[str, Any]], values: list[Any], key: str) -> np.ndarray:
    """UBJSON typed arrays of one format, joined as bytes and read in one step."""
    formats = set(map(typed_format, values))
    if len(formats) != 1:
        joined = np.concatenate([np.asarray(value) for value in values])
    else:
        joined = _native(np.frombuffer(bytearray().join(values), dtype=formats.pop()))
    if joined.size and joined.dtype.kind not in "iub":
        raise _not_integers(trees, key)
    return joined.astype(np.int32 if joined.dtype.itemsize <= 4 else np.int64, copy=False)


def _native(array: np.ndarray) -> np.ndarray:
    """A writable array in native byte order, swapped in place (no second copy)."""
    if array.dtype.isnative:
        return array
    return array.byteswap(inplace=True).view(array.dtype.newbyteorder())


def _not_integers(trees: list[dict[str, Any]], key: str) -> InvalidTree:
    """Which tree's ``key`` is not all whole numbers (found tree by tree, only on failure)."""
    for index, tree in enumerate(trees):
        try:
            array = np.asarray(tree[key]) if len(tree[key]) else np.zeros(0, dtype=np.int64)
        except (ValueError, OverflowError):  # ragged, or beyond int64
            return InvalidTree(None, f"{key} is not an array of integers", tree=index)
        if array.dtype.kind not in "iub" or array.ndim != 1:
            return InvalidTree(None, f"{key} is not an array of integers", tree=index)
    return InvalidTree(None, f"{key} is not an array of integers")


def joined(arrays: list[TreeArrays]) -> TreeArrays:
    """Scalar-leaf trees' arrays one after another (their categories are left out)."""
    starts = np.cumsum([0, *(a.n_nodes for a in arrays)])

    def all_of(name: str) -> np.ndarray:
        return np.concatenate([getattr(a, name) for a in arrays])

    none = np.zeros(0, dtype=np.int64)
    kinds = ("left", "right", "parents", "features", "split_type")
    left, right, parents, features, split_type = (all_of(kind) for kind in kinds)
    empty = Categories(none, none, none, none)
    return TreeArrays(left, right, parents, features, split_type, empty, None, starts)
