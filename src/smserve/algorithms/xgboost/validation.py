"""A model file is an input: its document (JSON or UBJSON) is checked before XGBoost or the fast
predictor touches it.

XGBoost 3 loads, and then crashes the process on (SIGSEGV while it loads or at its first
prediction, or reads outside its arrays), files whose trees point outside themselves, cycle,
split on features the model does not have, name output groups it does not have or list
categories outside their arrays; and it predicts differently by batch size for a tree whose
right child is not its left child + 1. So every tree's structure is checked here
(``tree_checks``), with ``tree_info``, ``iteration_indptr`` and ``best_iteration``, and every
declared count must match the arrays it describes.

What a model declares but its file does not hold is charged to a ``LoadBudget`` first: its
feature count (XGBoost's predictor keeps 64 rows of that width per thread), its output groups,
its categories (a bitfield as wide as the largest category per categorical split) and its
nodes. The budget follows from the container's memory, as the multi-model budget does
(``resources``). A refusal is a ModelLoadError naming the file, and the tree and node.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from smserve import resources
from smserve.algorithms.xgboost.document_fields import (
    ARRAYS,
    Invalid,
    integers,
    length,
    member,
    sized,
    whole,
)
from smserve.algorithms.xgboost.forest_arrays import joined, plain_forest
from smserve.algorithms.xgboost.reencoded import reencoded
from smserve.algorithms.xgboost.tree_checks import (
    Categories,
    InvalidTree,
    TreeArrays,
    check_categories,
    check_tree,
    largest_category,
)
from smserve.algorithms.xgboost.ubjson import Truncated, UbjsonError, decode
from smserve.errors import ModelLoadError

_JSON_START = re.compile(rb"\s*\{\s*[\"}]")
BLOCK_ROWS = 64  # rows XGBoost's CPU predictor holds per thread, each num_feature wide
FEATURE_BYTES = 4 * BLOCK_ROWS  # per feature per thread
OUTPUT_BYTES = 4 * 16384  # per output group: a batch of 16,384 rows' predictions
NODE_BYTES = 128  # per node: XGBoost's node, its statistics, the fast predictor's copy


@dataclass(frozen=True, slots=True)
class LoadBudget:
    """What one model's declared sizes may cost: ``limit`` bytes, for ``threads`` threads
    predicting at once."""

    limit: int
    threads: int
    source: str

    @classmethod
    def of(cls, found: resources.Resources) -> LoadBudget:
        limit = int(found.memory_bytes * resources.MODEL_SHARE)
        source = f"{resources.MODEL_SHARE:.0%} of {found.memory_bytes >> 20} MiB of memory"
        return cls(limit, found.cpu_count, source)

    def check(self, needed: int, what: str) -> None:
        if needed > self.limit:
            raise Invalid(
                f"{what} would need {needed} bytes of memory, over its {self.limit}-byte load "
                f"budget ({self.source})"
            )


@functools.cache
def default_budget() -> LoadBudget:
    """The budget of this container (its cgroup memory limit, else physical memory)."""
    return LoadBudget.of(resources.detect())


def validate(path: Path, data: bytes, budget: LoadBudget | None = None) -> bytes:
    """The bytes XGBoost is to read for the model document ``data``: a checked JSON plain
    forest as UBJSON (``reencoded``), else ``data``. Raise ModelLoadError naming ``path`` when
    the document breaks a rule of the module doc. Documents that are not JSON or UBJSON are
    left to XGBoost."""
    document = _decoded(path, data)
    if document is None:
        return data
    try:
        forest = check_document(document, budget or default_budget())
    except Invalid as exc:
        raise ModelLoadError(f"{path} is not a valid XGBoost model: {exc}") from None
    if forest is None or not _JSON_START.match(data):
        return data
    return reencoded(document, forest) or data


def _decoded(path: Path, data: bytes) -> Any:
    """The JSON or UBJSON document, None for other bytes; a truncated one is refused as such
    (XGBoost crashes the process on some truncated UBJSON)."""
    if _JSON_START.match(data) and not data.rstrip().endswith(b"}"):
        raise ModelLoadError(_truncated(path, len(data), "the JSON document is not closed"))
    try:
        if _JSON_START.match(data):
            return _json(data)
        if data.startswith(b"{"):
            return decode(data)
    except Truncated as exc:
        raise ModelLoadError(_truncated(path, len(data), str(exc))) from None
    except (ValueError, UbjsonError, RecursionError) as exc:
        raise ModelLoadError(f"{path} is not a valid XGBoost model document: {exc}") from None
    return None


def _truncated(path: Path, size: int, detail: str) -> str:
    return (
        f"{path} is truncated ({size} bytes; {detail}): the model file was cut short while "
        "being saved or copied; save or copy it again"
    )


def _json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # NaN and Infinity, which XGBoost writes and orjson refuses
        return json.loads(data)


def check_document(document: Any, budget: LoadBudget) -> TreeArrays | None:
    """Raise Invalid for the first rule ``document`` breaks; return a plain forest's joined
    node arrays (None for any other model)."""
    learner = member(document, "learner", dict)
    params = member(learner, "learner_model_param", dict)
    n_features = whole(params.get("num_feature", 0), "num_feature")
    budget.check(n_features * FEATURE_BYTES * budget.threads, f"its {n_features} features")
    groups = _output_groups(params)
    budget.check(groups * OUTPUT_BYTES, f"its {groups} output groups")
    booster = member(learner, "gradient_booster", dict)
    name = booster.get("name")
    if name == "gblinear":
        _check_linear(member(booster, "model", dict), n_features, groups)
        return None
    holder = member(booster, "gbtree", dict) if name == "dart" else booster
    model = member(holder, "model", dict)
    n_iterations, forest = check_forest(model, n_features, groups, budget)
    _check_best_iteration(learner, n_iterations)
    return forest


def _output_groups(params: dict[str, Any]) -> int:
    n_class = whole(params.get("num_class", 0), "num_class")
    n_target = whole(params.get("num_target", 1), "num_target")
    return max(n_class, n_target, 1)


def check_forest(
    model: dict[str, Any], n_features: int, groups: int, budget: LoadBudget
) -> tuple[int, TreeArrays | None]:
    """Check every tree, ``tree_info`` and ``iteration_indptr``; return the iteration count
    and, for a plain forest (``forest_arrays``), its joined node arrays."""
    trees = member(model, "trees", list)
    declared = whole(member(model, "gbtree_model_param", dict).get("num_trees", 0), "num_trees")
    if declared != len(trees):
        raise Invalid(f"gbtree_model_param declares {declared} trees, the model has {len(trees)}")
    info = integers(model.get("tree_info", []), "tree_info")
    if info.size != len(trees):
        raise Invalid(f"tree_info has {info.size} entries for {len(trees)} trees")
    if info.size and (info.min() < 0 or info.max() >= groups):
        tree = int(np.argmax((info < 0) | (info >= groups)))
        raise Invalid(
            f"tree {tree}: output group {info[tree]} is outside the model's {groups} groups"
        )
    sizes = [_declared_nodes(tree, index) for index, tree in enumerate(trees)]
    budget.check(sum(sizes) * NODE_BYTES, f"its {sum(sizes)} nodes")
    forest = _located(plain_forest, trees, sizes, None)
    if forest is not None and not forest.split_type.any():  # all trees at once
        _located(check_tree, forest, n_features, None)
        return _iterations(model, len(trees)), forest
    arrays = [
        _located(tree_arrays, tree, size, i)
        for i, (tree, size) in enumerate(zip(trees, sizes, strict=True))
    ]
    if all(a.leaf_slots is None for a in arrays):
        _located(check_tree, joined(arrays), n_features, None)
    else:  # vector leaves: each tree's leaf count differs
        for index, tree_array in enumerate(arrays):
            _located(check_tree, tree_array, n_features, index)
    bitfields = sum(_categorical(tree_array, index) for index, tree_array in enumerate(arrays))
    budget.check(bitfields, "its categorical splits' bitfields")
    return _iterations(model, len(trees)), None


def _located(check: Any, tree: Any, size: Any, index: int | None) -> Any:
    """``check(tree, size)``, its InvalidTree (or, for tree ``index``, Invalid) reworded
    to name the tree and node."""
    try:
        return check(tree, size)
    except InvalidTree as exc:
        number = exc.tree if exc.tree is not None else index
        where = f"tree {number}" + ("" if exc.node is None else f", node {exc.node}")
        raise Invalid(f"{where}: {exc.detail}") from None
    except Invalid as exc:
        raise Invalid(f"tree {index}: {exc}") from None


def _categorical(tree: TreeArrays, index: int) -> int:
    """Check tree ``index``'s categories; the bytes of their bitfields."""
    if not tree.categories.nodes.size and not np.any(tree.split_type):
        return 0
    _located(lambda t, _: check_categories(t), tree, None, index)
    return (largest_category(tree) // 8 + 8) * int(tree.categories.nodes.size)


def _declared_nodes(tree: Any, index: int) -> int:
    if not isinstance(tree, dict):
        raise Invalid(f"tree {index} is not an object")
    param = member(tree, "tree_param", dict)
    n_nodes = whole(param.get("num_nodes"), f"tree {index}'s num_nodes")
    if n_nodes < 1:
        raise Invalid(f"tree {index} declares {n_nodes} nodes")
    return n_nodes


def tree_arrays(tree: dict[str, Any], n_nodes: int) -> TreeArrays:
    """The integer node arrays of ``tree``, each checked to have ``n_nodes`` entries (and
    the floating-point ones too); raises Invalid."""
    width = whole(member(tree, "tree_param", dict).get("size_leaf_vector", 1), "leaf size")
    for key in ("split_conditions", "loss_changes", "sum_hessian", "default_left"):
        sized(tree.get(key), n_nodes, key)
    if "base_weights" in tree:
        sized(tree["base_weights"], n_nodes * max(width, 1), "base_weights")
    arrays = {
        key: sized(integers(tree.get(key), key), n_nodes, key)
        for key in ("left_children", "right_children", "parents", "split_indices")
    }
    split_type = tree.get("split_type", np.zeros(n_nodes, dtype=np.int64))
    categories = Categories(
        *(integers(tree.get(f"categories{key}", []), f"categories{key}") for key in _CATS)
    )
    return TreeArrays(
        arrays["left_children"],
        arrays["right_children"],
        arrays["parents"],
        arrays["split_indices"],
        sized(integers(split_type, "split_type"), n_nodes, "split_type"),
        categories,
        _leaf_slots(tree, width),
    )


def _leaf_slots(tree: dict[str, Any], width: int) -> int | None:
    """A vector-leaf tree's leaf count (its ``leaf_weights`` hold ``width`` per leaf)."""
    if width <= 1:
        return None
    size = length(tree.get("leaf_weights"))
    if size is None or size % width:
        raise Invalid(f"leaf_weights is not a multiple of the leaf size {width}")
    return size // width


_CATS = ("_nodes", "_segments", "_sizes", "")


def _iterations(model: dict[str, Any], n_trees: int) -> int:
    if "iteration_indptr" not in model:
        return n_trees
    indptr = integers(model["iteration_indptr"], "iteration_indptr")
    if indptr.size < 1 or indptr[0] != 0 or indptr[-1] != n_trees or np.any(np.diff(indptr) < 0):
        raise Invalid(f"iteration_indptr does not divide the {n_trees} trees into iterations")
    return int(indptr.size - 1)


def _check_best_iteration(learner: dict[str, Any], n_iterations: int) -> None:
    attributes = learner.get("attributes") or {}
    if not isinstance(attributes, dict) or "best_iteration" not in attributes:
        return
    best = whole(attributes["best_iteration"], "best_iteration", signed=True)
    if not 0 <= best < n_iterations:
        raise Invalid(f"best_iteration {best} is not one of its {n_iterations} iterations")


def _check_linear(model: dict[str, Any], n_features: int, groups: int) -> None:
    weights = member(model, "weights", ARRAYS)
    expected = (n_features + 1) * groups
    if len(weights) != expected:
        raise Invalid(f"gblinear has {len(weights)} weights, not (features + 1) x groups")
