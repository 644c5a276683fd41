"""XGBoost up to 1.2 added the base margin after the trees' sum; from 1.3 it starts from the
base margin and adds each tree to it. In float32 the two differ in the last bit for about a
third of the rows. To answer as the writing version did, a model from before 1.3 is written
with a neutral ``base_score`` (its margin exactly 0) and one more iteration, right after the
last one served (``best_iteration``, else the last), of single-leaf trees whose leaf is the
base margin: the installed XGBoost then computes 0 + tree 0 + ... + tree n + base margin,
the old order, bit for bit. DART kept the old order up to 1.3 (1.3.3 measured; 1.4, never a
built-in's version, assumed as 1.3). ``best_iteration`` and ``best_ntree_limit`` move by that
iteration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from smserve.algorithms.xgboost.legacy import conventions, libm
from smserve.algorithms.xgboost.legacy.binary import LegacyModel

F = np.float32


@dataclass(frozen=True)
class BaseLast:
    margin: np.float32  # the base margin the writing version added last
    iteration: int  # the bias iteration goes before this iteration


def plan(model: LegacyModel, objective: str, iterations: int) -> BaseLast | None:
    if model.trees is None or model.version >= (1, 4 if model.booster == "dart" else 3):
        return None
    best = _best_iteration(model.attributes, iterations)
    return BaseLast(old_margin(model, objective), best + 1)


def _best_iteration(attributes: dict[str, str], iterations: int) -> int:
    try:
        best = int(attributes.get("best_iteration", iterations - 1))
    except ValueError:
        best = iterations - 1
    return best if 0 <= best < iterations else iterations - 1


def old_margin(model: LegacyModel, objective: str) -> np.float32:
    """The base margin XGBoost before 1.3 predicted with (float32, as it computed it)."""
    stored = F(model.param["base_score"])
    if model.version < (1, 0) or objective.startswith("multi:"):
        return stored  # 0.90 stored the margin itself
    if objective in conventions.SIGMOID_FAMILY or objective == "binary:logitraw":
        return conventions.logit(stored)
    if objective in conventions.EXP_FAMILY:
        return libm.logf(stored)
    return stored


def neutral_base_score(objective: str) -> np.float32:
    """The base_score whose margin is exactly 0 for ``objective``."""
    if objective in conventions.SIGMOID_FAMILY:
        return F(0.5)
    if objective in conventions.EXP_FAMILY or objective.startswith("survival:"):
        return F(1.0)
    return F(0.0)


def bias_trees(value: np.float32, groups: int, parallel: int, num_feature: int) -> list[Any]:
    """One iteration of single-leaf trees: per output group, the first leaf ``value``, the
    other parallel trees' 0 (adding 0 changes no float)."""
    return [
        _leaf(value if k == 0 else F(0.0), num_feature)
        for _ in range(groups)
        for k in range(parallel)
    ]


def _leaf(value: np.float32, num_feature: int) -> dict[str, Any]:
    def one(dtype: str, item: Any) -> np.ndarray:
        return np.array([item], dtype=dtype)

    empty = np.zeros(0, ">i4")
    return {
        "base_weights": one(">f4", value),
        "categories": empty,
        "categories_nodes": empty,
        "categories_segments": np.zeros(0, ">i8"),
        "categories_sizes": np.zeros(0, ">i8"),
        "default_left": one("u1", 0),
        "id": 0,
        "left_children": one(">i4", -1),
        "loss_changes": one(">f4", 0.0),
        "parents": one(">i4", 0x7FFFFFFF),
        "right_children": one(">i4", -1),
        "split_conditions": one(">f4", value),
        "split_indices": one(">i4", 0),
        "split_type": one("u1", 0),
        "sum_hessian": one(">f4", 1.0),
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(num_feature),
            "num_nodes": "1",
            "size_leaf_vector": "1",
        },
    }


def shifted_attributes(attributes: dict[str, str], parallel: int) -> dict[str, str]:
    """best_iteration one later, best_ntree_limit ``parallel`` trees more (the bias one)."""
    shifted = dict(attributes)
    for key, step in (("best_iteration", 1), ("best_ntree_limit", parallel)):
        value = shifted.get(key, "")
        if value.isdigit() and (key == "best_iteration" or int(value) > 0):
            shifted[key] = str(int(value) + step)
    return shifted


def into_json_dart(model: dict[str, Any]) -> bool:
    """The same for a JSON model document (1.3's pickles hold one): a DART model from before
    1.4 gets the bias iteration and a neutral base_score, in place (True). Other models are
    left as they are (False)."""
    learner = model["learner"]
    booster = learner["gradient_booster"]
    version = tuple(int(v) for v in model.get("version", (1, 4)))
    if booster.get("name") != "dart" or version >= (1, 4):
        return False
    param = learner["learner_model_param"]
    objective = learner["objective"]["name"]
    margin = _json_margin(objective, F(float(param["base_score"])), version)
    gbtree = booster["gbtree"]["model"]
    groups = max(1, int(param.get("num_class", 0)))
    parallel = max(1, int(gbtree["gbtree_model_param"].get("num_parallel_tree", 1)))
    trees = gbtree["trees"]
    iterations = len(trees) // (groups * parallel)
    at = (_best_iteration(learner.get("attributes", {}), iterations) + 1) * groups * parallel
    bias = bias_trees(margin, groups, parallel, int(param["num_feature"]))
    trees[at:at] = [_json_tree(leaf, trees[0]) for leaf in bias]
    for index, tree in enumerate(trees):
        tree["id"] = index
    gbtree["tree_info"][at:at] = [g for g in range(groups) for _ in range(parallel)]
    booster["weight_drop"][at:at] = [1.0] * len(bias)
    gbtree["gbtree_model_param"]["num_trees"] = str(len(trees))
    param["base_score"] = conventions.float_text(neutral_base_score(objective))
    learner["attributes"] = shifted_attributes(learner.get("attributes", {}), parallel)
    return True


def _json_margin(objective: str, score: np.float32, version: tuple[int, ...]) -> np.float32:
    logit_raw = objective == "binary:logitraw" and version < (1, 3, 1)
    if objective in conventions.SIGMOID_FAMILY or logit_raw:
        return conventions.logit(score)
    if objective in conventions.EXP_FAMILY:
        return libm.logf(score)
    return score


def _json_tree(leaf: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """``leaf`` in the form of the document's tree ``like`` (its keys, lists for arrays)."""
    tree: dict[str, Any] = {}
    for key, value in like.items():
        item = leaf.get(key, [])
        tree[key] = item.tolist() if isinstance(item, np.ndarray) else item
        if key == "default_left" and value and isinstance(value[0], bool):
            tree[key] = [bool(flag) for flag in tree[key]]
    return tree
