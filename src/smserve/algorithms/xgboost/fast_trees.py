"""A booster's trees as the flat, validated node arrays of ``_fast.Forest``.

The trees come from XGBoost's own UBJSON (``Booster.save_raw("ubj")``): its typed arrays hold
the thresholds and leaf values as the float32 XGBoost predicts with, bit for bit (JSON would
go through decimal text). The base margin of each output group is asked of XGBoost itself: the
model without its trees predicts exactly that margin, whatever the objective, intercept or
XGBoost version made of ``base_score``.

Covered: ``gbtree`` models of scalar-leaf trees with numerical splits (one tree per class or
target included). Not covered, so XGBoost keeps predicting: DART and linear boosters,
categorical splits, vector-leaf (multi-output) trees, trees with deleted nodes, objectives
whose transform is not written here, models over MAX_NODES nodes, and models wider than
``fast_check.MAX_WIDTH`` features.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import xgboost as xgb

from smserve.algorithms.xgboost.fast_check import MAX_WIDTH
from smserve.algorithms.xgboost.ubjson import TYPED_ARRAYS, UbjsonError, decode

logger = logging.getLogger(__name__)

MAX_NODES = 8 * 1024 * 1024  # 128 MiB of nodes; beyond it XGBoost's own predictor stays
NODE = np.dtype([("value", "<f4"), ("feature", "<u4"), ("left", "<i4"), ("right", "<i4")])
DEFAULT_LEFT = np.uint32(1 << 31)

# The C transforms (enum Transform in _fast.c), per objective, as XGBoost 3 applies
# them to the margin for ``predict_type="value"``.
IDENTITY, SIGMOID, EXP, HINGE, SOFTMAX, ARGMAX = range(6)
_IDENTITY_OBJECTIVES = (
    "reg:squarederror",
    "reg:squaredlogerror",
    "reg:pseudohubererror",
    "reg:absoluteerror",
    "reg:quantileerror",
    "binary:logitraw",
    "rank:pairwise",
    "rank:ndcg",
    "rank:map",
)
_EXP_OBJECTIVES = ("count:poisson", "reg:gamma", "reg:tweedie", "survival:cox", "survival:aft")
TRANSFORMS = {
    **dict.fromkeys(_IDENTITY_OBJECTIVES, IDENTITY),
    **dict.fromkeys(("binary:logistic", "reg:logistic"), SIGMOID),
    **dict.fromkeys(_EXP_OBJECTIVES, EXP),
    "binary:hinge": HINGE,
    "multi:softprob": SOFTMAX,
    "multi:softmax": ARGMAX,
}


class NotCovered(Exception):
    """The model has something the fast predictor does not do; the message says what."""


@dataclass(frozen=True, slots=True)
class FlatTrees:
    """The trees in prediction order: ``nodes`` (NODE records, children as absolute indices),
    ``starts`` (each tree's first node, then the node count), ``groups`` (each tree's output
    group), ``base`` (each group's base margin, float32) and the model's shape."""

    nodes: np.ndarray
    starts: np.ndarray
    groups: np.ndarray
    base: np.ndarray
    n_features: int
    transform: int
    thresholds: list[np.ndarray]  # per feature, the distinct split thresholds (float32)


def flat_trees(booster: xgb.Booster, iteration_range: tuple[int, int]) -> FlatTrees:
    """Raises NotCovered for a model outside what the module doc lists."""
    try:
        document = decode(bytes(booster.save_raw("ubj")))
        learner = document["learner"]
    except (UbjsonError, KeyError, TypeError, xgb.core.XGBoostError) as exc:
        raise NotCovered(f"its UBJSON could not be read: {exc}") from exc
    transform = _transform(learner)
    trees, groups = _trees_in_range(learner, iteration_range)
    n_features = int(learner["learner_model_param"]["num_feature"])
    if n_features > MAX_WIDTH:  # before its per-feature thresholds are listed
        raise NotCovered(f"it has {n_features} features, over the {MAX_WIDTH} its check covers")
    nodes, starts = _nodes(trees)
    base = base_margins(document, n_features)
    features = nodes["feature"] & ~DEFAULT_LEFT
    splits = nodes["left"] >= 0
    thresholds = _thresholds(features[splits], nodes["value"][splits], n_features)
    return FlatTrees(nodes, starts, groups, base, n_features, transform, thresholds)


def _transform(learner: dict[str, Any]) -> int:
    if learner["gradient_booster"]["name"] != "gbtree":
        raise NotCovered(f"its booster is {learner['gradient_booster']['name']}, not gbtree")
    objective = learner["objective"]["name"]
    if objective not in TRANSFORMS:
        raise NotCovered(f"its objective {objective} has no transform written here")
    return TRANSFORMS[objective]


def _trees_in_range(
    learner: dict[str, Any], iteration_range: tuple[int, int]
) -> tuple[list[dict[str, Any]], np.ndarray]:
    model = learner["gradient_booster"]["model"]
    trees, groups = model["trees"], np.asarray(model["tree_info"], dtype=np.int32)
    if iteration_range[1] > 0:
        stop = int(model["iteration_indptr"][iteration_range[1]])
        trees, groups = trees[:stop], groups[:stop]
    if not trees:
        raise NotCovered("it has no trees")
    return trees, groups


def _nodes(trees: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.array([_checked_size(tree) for tree in trees], dtype=np.int64)
    if sizes.sum() > MAX_NODES:
        raise NotCovered(f"it has {sizes.sum()} nodes, over {MAX_NODES}")
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int32)
    nodes = np.empty(int(sizes.sum()), dtype=NODE)
    nodes["value"] = _joined(trees, "split_conditions", np.float32)
    split = _joined(trees, "split_indices", np.uint32)
    default_left = _joined(trees, "default_left", np.uint32)
    nodes["feature"] = split | (default_left.astype(bool) * DEFAULT_LEFT)
    offsets = np.repeat(starts[:-1], sizes)
    for side, key in (("left", "left_children"), ("right", "right_children")):
        child = _joined(trees, key, np.int32)
        nodes[side] = np.where(child >= 0, child + offsets, -1)
    return nodes, starts


def _checked_size(tree: dict[str, Any]) -> int:
    param = tree["tree_param"]
    if int(param.get("size_leaf_vector", "1")) > 1:
        raise NotCovered("it has vector-leaf (multi-output) trees")
    if int(param["num_deleted"]) != 0:
        raise NotCovered("it has trees with deleted nodes")
    if np.any(np.asarray(tree["split_type"])):
        raise NotCovered("it has categorical splits")
    return int(param["num_nodes"])


def _joined(trees: list[dict[str, Any]], key: str, dtype: type[np.generic]) -> np.ndarray:
    return np.concatenate([np.asarray(tree[key]) for tree in trees]).astype(dtype)


def _thresholds(features: np.ndarray, values: np.ndarray, n_features: int) -> list[np.ndarray]:
    pairs = np.unique(np.stack((features, values.view(np.uint32))), axis=1)
    bounds = np.searchsorted(pairs[0], np.arange(n_features + 1))
    as_float = pairs[1].astype(np.uint32).view(np.float32)
    return [as_float[bounds[f] : bounds[f + 1]] for f in range(n_features)]


def base_margins(document: dict[str, Any], n_features: int) -> np.ndarray:
    """Each output group's base margin, as XGBoost itself starts every row: what it predicts
    for the model with its trees replaced by one single-leaf tree of 0 per group (a fitted
    model, so XGBoost applies the objective's link to ``base_score`` as for the real one)."""
    zeroed = xgb.Booster()
    zeroed.load_model(bytearray(orjson.dumps(_zeroed(document, n_features), default=_listed)))
    zeroed.set_param({"nthread": 1})
    row = np.full((1, max(n_features, 1)), np.nan, dtype=np.float32)
    margin = zeroed.inplace_predict(row, predict_type="margin", validate_features=False)
    return np.ascontiguousarray(np.asarray(margin, dtype=np.float32).reshape(-1))


def _listed(value: Any) -> Any:
    if isinstance(value, TYPED_ARRAYS):  # typed arrays left in the document (big-endian views)
        return np.asarray(value).tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _zeroed(document: dict[str, Any], n_features: int) -> dict[str, Any]:
    learner = document["learner"]
    params = learner["learner_model_param"]
    n_groups = max(int(params.get("num_class", 0)), int(params.get("num_target", 1)), 1)
    booster = learner["gradient_booster"]
    model = {
        **booster["model"],
        "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(n_groups)},
        "iteration_indptr": [0, n_groups],
        "tree_info": list(range(n_groups)),
        "trees": [_zero_leaf(i, n_features) for i in range(n_groups)],
    }
    stripped = {**learner, "gradient_booster": {**booster, "model": model}}
    return {**document, "learner": stripped}


def _zero_leaf(index: int, n_features: int) -> dict[str, Any]:
    zero, none = [0.0], [0]
    return {
        **dict.fromkeys(("base_weights", "loss_changes", "split_conditions", "sum_hessian"), zero),
        **dict.fromkeys(("default_left", "split_indices", "split_type"), none),
        **dict.fromkeys(("categories", "categories_nodes", "categories_segments"), []),
        "categories_sizes": [],
        "id": index,
        "left_children": [-1],
        "right_children": [-1],
        "parents": [2147483647],
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(n_features),
            "num_nodes": "1",
            "size_leaf_vector": "1",
        },
    }
