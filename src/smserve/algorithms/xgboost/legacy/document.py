"""A legacy binary model (``binary.LegacyModel``) as the JSON model document of XGBoost's
current schema (doc/model.schema), written as UBJSON (``ubj``): every node array converted
for all trees at once, each tree's arrays then slices of those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from smserve.algorithms.xgboost.legacy import base_last, conventions
from smserve.algorithms.xgboost.legacy.binary import LegacyModel
from smserve.algorithms.xgboost.ubjson_writer import encode
from smserve.errors import ModelLoadError

SCHEMA_VERSION = [3, 0, 5]  # the schema the document follows (3.2 reads it)
LOW_31 = np.uint32(0x7FFFFFFF)
INTERNAL_ATTRIBUTES = frozenset({"objective", "metrics", "count_poisson_max_delta_step"})
_EMPTY_I32 = np.zeros(0, np.int32)
_EMPTY_I64 = np.zeros(0, np.int64)


@dataclass(frozen=True)
class Extras:
    """What a pickle adds to the binary it holds: the Python Booster's feature names and
    types, and the training configuration's num_parallel_tree (1.0-1.2)."""

    feature_names: Sequence[str] = ()
    feature_types: Sequence[str] = ()
    num_parallel_tree: int | None = None


def to_ubjson(path: Path, model: LegacyModel, extras: Extras = Extras()) -> bytes:
    return encode(document(path, model, extras))


def document(path: Path, model: LegacyModel, extras: Extras = Extras()) -> dict[str, Any]:
    objective = conventions.objective_name(model.objective)
    num_class = int(model.param["num_class"])
    attributes = _user_attributes(model.attributes)
    booster, base = _booster(path, model, extras, objective)
    if base is not None:
        attributes = base_last.shifted_attributes(attributes, _parallel_trees(model, extras))
    learner = {
        "attributes": attributes,
        "feature_names": list(extras.feature_names),
        "feature_types": list(extras.feature_types),
        "gradient_booster": booster,
        "learner_model_param": _learner_param(model, objective, base),
        "objective": conventions.objective_config(objective, num_class, model.attributes),
    }
    return {"learner": learner, "version": SCHEMA_VERSION}


def _user_attributes(attributes: dict[str, str]) -> dict[str, str]:
    return {
        key: value
        for key, value in attributes.items()
        if key not in INTERNAL_ATTRIBUTES and not key.startswith("SAVED_PARAM_")
    }


def _learner_param(
    model: LegacyModel, objective: str, base: base_last.BaseLast | None
) -> dict[str, str]:
    param = model.param
    if base is None:
        score = conventions.base_score(objective, float(param["base_score"]), model.version)
    else:
        score = base_last.neutral_base_score(objective)
    from_average = int(param["boost_from_average"]) if model.version >= (1, 7) else 1
    return {
        "base_score": conventions.float_text(score),
        "boost_from_average": str(from_average),
        "num_class": str(int(param["num_class"])),
        "num_feature": str(int(param["num_feature"])),
        "num_target": str(max(1, int(param["num_target"]))),
    }


def _booster(
    path: Path, model: LegacyModel, extras: Extras, objective: str
) -> tuple[dict[str, Any], base_last.BaseLast | None]:
    if model.linear_weights is not None:
        return _linear(model), None
    trees = model.trees
    assert trees is not None
    parallel = _parallel_trees(model, extras)
    per_iteration = parallel * trees.num_output_group
    iterations = _iterations(path, len(trees.nodes), per_iteration)
    base = base_last.plan(model, objective, iterations)
    tree_docs, tree_info, drops = _with_bias(model, parallel, base)
    gbtree_model = {
        "gbtree_model_param": {
            "num_parallel_tree": str(parallel),
            "num_trees": str(len(tree_docs)),
        },
        "iteration_indptr": list(range(0, len(tree_docs) + 1, per_iteration)),
        "tree_info": tree_info,
        "trees": tree_docs,
    }
    gbtree = {"model": gbtree_model, "name": "gbtree"}
    if model.booster != "dart":
        return gbtree, base
    return {"gbtree": gbtree, "name": "dart", "weight_drop": drops}, base


def _linear(model: LegacyModel) -> dict[str, Any]:
    """The file does not record the rounds boosted; the installed XGBoost needs some (with 0
    it takes base_score as a margin), and gblinear's prediction does not depend on them."""
    assert model.linear_weights is not None
    best = model.attributes.get("best_iteration", "")
    rounds = int(best) + 1 if best.isdigit() else 1
    weights = model.linear_weights.astype(">f4")
    return {"model": {"boosted_rounds": rounds, "weights": weights}, "name": "gblinear"}


def _with_bias(
    model: LegacyModel, parallel: int, base: base_last.BaseLast | None
) -> tuple[list[Callable[[], dict[str, Any]]], list[int], list[float]]:
    """The trees, their groups and (dart) weights, the bias iteration inserted if planned."""
    trees = model.trees
    assert trees is not None
    docs: list[Callable[[int], dict[str, Any]]] = [
        partial(_tree, nodes, stats, param)
        for nodes, stats, param in zip(trees.nodes, trees.stats, trees.params, strict=True)
    ]
    info = [int(group) for group in trees.tree_info]
    drops = [] if model.weight_drop is None else [float(w) for w in model.weight_drop]
    if base is not None:
        groups = trees.num_output_group
        at = base.iteration * parallel * groups
        num_feature = int(model.param["num_feature"])
        bias = base_last.bias_trees(base.margin, groups, parallel, num_feature)
        docs[at:at] = [partial(_with_id, leaf) for leaf in bias]
        info[at:at] = [g for g in range(groups) for _ in range(parallel)]
        if model.weight_drop is not None:
            drops[at:at] = [1.0] * (parallel * groups)
    # Each tree is converted as the encoder reaches it, so only one is held converted at once
    return [partial(source, index) for index, source in enumerate(docs)], info, drops


def _with_id(leaf: dict[str, Any], index: int) -> dict[str, Any]:
    return leaf | {"id": index}


def _parallel_trees(model: LegacyModel, extras: Extras) -> int:
    """num_parallel_tree: in the file from 1.6 (before, that slot is num_roots, always 1)."""
    if model.version >= (1, 6):
        assert model.trees is not None
        return model.trees.num_parallel_tree
    return max(1, extras.num_parallel_tree or 1)


def _iterations(path: Path, num_trees: int, per_iteration: int) -> int:
    if num_trees % per_iteration:
        raise ModelLoadError(
            f"{path}: {num_trees} trees are not whole iterations of {per_iteration} trees "
            "(num_parallel_tree x output groups)"
        )
    return num_trees // per_iteration


def _tree(nodes: np.ndarray, stats: np.ndarray, param: np.void, index: int) -> dict[str, Any]:
    """One tree's arrays, converted from its node records (big-endian, as UBJSON stores them)."""
    sindex = nodes["sindex"]
    return {
        "base_weights": stats["base_weight"].astype(">f4"),
        "categories": _EMPTY_I32,
        "categories_nodes": _EMPTY_I32,
        "categories_segments": _EMPTY_I64,
        "categories_sizes": _EMPTY_I64,
        "default_left": (sindex >> np.uint32(31)).astype(np.uint8),
        "id": index,
        "left_children": nodes["left"].astype(">i4"),
        "loss_changes": stats["loss_chg"].astype(">f4"),
        "parents": (nodes["parent"].view(np.uint32) & LOW_31).astype(">i4"),
        "right_children": nodes["right"].astype(">i4"),
        "split_conditions": nodes["info"].astype(">f4"),
        "split_indices": (sindex & LOW_31).astype(">i4"),
        "split_type": np.zeros(sindex.size, np.uint8),
        "sum_hessian": stats["sum_hess"].astype(">f4"),
        "tree_param": {
            "num_deleted": str(int(param["num_deleted"])),
            "num_feature": str(int(param["num_feature"])),
            "num_nodes": str(sindex.size),
            "size_leaf_vector": "1",
        },
    }
