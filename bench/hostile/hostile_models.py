"""Hostile model files: each made by editing the JSON of a small real model (trained here),
one per class of issue 32 (far, negative and out-of-range indices, non-adjacent children,
cycles, bad groups, bogus categories, best_iteration out of the trees, a tiny file declaring
a million features). ``case_documents`` builds them; ``hostile_model_suite.py`` loads each in
its own process, as the server would, and measures the outcome, peak memory and time.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import xgboost as xgb

Document = dict[str, Any]
FAR_FEATURE = 50_000_000
WIDE_FEATURES = 1_000_000


@dataclass(frozen=True)
class ModelCase:
    """``edit`` turns the base document into the hostile one; ``refused``: the load must end
    in a ModelLoadError (False: the model must load and answer; None: either)."""

    name: str
    edit: Callable[[Document], None]
    refused: bool | None = True
    sample: bool = False
    categorical: bool = False
    timed: bool = True  # held to the time bound (the controls' fast-predictor measurement is not)


def base_document(categorical: bool = False, n_features: int = 4) -> Document:
    """binary:logistic, 3 trees of depth 3 on ``n_features`` features (one categorical,
    with ``categorical``), as XGBoost's JSON."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, n_features)).astype(np.float32)
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0.5)).astype(np.float32)
    if categorical:
        x[:, 0] = rng.integers(0, 5, size=len(x))
        types = ["c", *["q"] * (n_features - 1)]
        matrix = xgb.DMatrix(x, label=y, feature_types=types, enable_categorical=True)
    else:
        matrix = xgb.DMatrix(x, label=y)
    params = {"objective": "binary:logistic", "max_depth": 3, "nthread": 1, "min_child_weight": 0}
    booster = xgb.train(params, matrix, num_boost_round=3)
    document: Document = json.loads(booster.save_raw("json"))
    return document


def trees(document: Document) -> list[Document]:
    result: list[Document] = document["learner"]["gradient_booster"]["model"]["trees"]
    return result


def deepest_split(tree: Document) -> int:
    """The split node with the highest index (on a rare path: deep in the tree)."""
    left = tree["left_children"]
    return max(i for i, child in enumerate(left) if child != -1)


def _far_feature(document: Document) -> None:
    tree = trees(document)[1]
    tree["split_indices"][deepest_split(tree)] = FAR_FEATURE


def _negative_feature(document: Document) -> None:
    tree = trees(document)[1]
    tree["split_indices"][deepest_split(tree)] = -3


def _swapped_children(document: Document) -> None:
    """A valid tree (every node reached once, children after parents) with the root's
    subtrees stored in the other order, so its right child is not its left child + 1."""
    tree = trees(document)[0]
    n = len(tree["left_children"])
    order = _preorder(tree, 0, right_first=True)
    if len(order) != n:
        raise AssertionError("the tree has unreached nodes")
    _renumber(tree, order)


def _preorder(tree: Document, node: int, right_first: bool) -> list[int]:
    left, right = tree["left_children"][node], tree["right_children"][node]
    if left == -1:
        return [node]
    first, second = (right, left) if right_first else (left, right)
    return [node, *_preorder(tree, first, False), *_preorder(tree, second, False)]


def _renumber(tree: Document, order: list[int]) -> None:
    new_of = {old: new for new, old in enumerate(order)}
    per_node = [k for k, v in tree.items() if isinstance(v, list) and len(v) == len(order)]
    per_node = [k for k in per_node if not k.startswith("categories")]
    old = copy.deepcopy(tree)
    for key in per_node:
        tree[key] = [old[key][o] for o in order]
    for key in ("left_children", "right_children"):
        tree[key] = [new_of[c] if c != -1 else -1 for c in tree[key]]
    tree["parents"] = [new_of[p] if p in new_of else p for p in tree["parents"]]


def _child_out_of_range(document: Document) -> None:
    tree = trees(document)[2]
    node = deepest_split(tree)
    tree["right_children"][node] = 400
    tree["left_children"][node] = 399


def _child_negative(document: Document) -> None:
    tree = trees(document)[2]
    tree["left_children"][deepest_split(tree)] = -7


def _cycle(document: Document) -> None:
    """The deepest split's children point back at the root's."""
    tree = trees(document)[0]
    node = deepest_split(tree)
    tree["left_children"][node] = 1
    tree["right_children"][node] = 2


def _self_loop(document: Document) -> None:
    tree = trees(document)[0]
    tree["left_children"][0] = 0
    tree["right_children"][0] = 1


def _bad_group(document: Document) -> None:
    document["learner"]["gradient_booster"]["model"]["tree_info"][1] = 7


def _negative_group(document: Document) -> None:
    document["learner"]["gradient_booster"]["model"]["tree_info"][1] = -1


def _best_iteration(value: int) -> Callable[[Document], None]:
    def edit(document: Document) -> None:
        document["learner"]["attributes"]["best_iteration"] = str(value)

    return edit


def _wide(document: Document) -> None:
    """The whole model declares a million features; its splits use the first four."""
    document["learner"]["learner_model_param"]["num_feature"] = str(WIDE_FEATURES)
    for tree in trees(document):
        tree["tree_param"]["num_feature"] = str(WIDE_FEATURES)


def _declared_nodes(document: Document) -> None:
    trees(document)[0]["tree_param"]["num_nodes"] = str(100_000_000)


def _bogus_category_node(document: Document) -> None:
    tree = _categorical_tree(document)
    tree["categories_nodes"][0] = 10_000


def _bogus_category_segment(document: Document) -> None:
    tree = _categorical_tree(document)
    tree["categories_segments"][0] = 1_000_000


def _bogus_category_size(document: Document) -> None:
    tree = _categorical_tree(document)
    tree["categories_sizes"][0] = 1_000_000


def _huge_category(document: Document) -> None:
    tree = _categorical_tree(document)
    tree["categories"][0] = 2_000_000_000


def _categorical_tree(document: Document) -> Document:
    for tree in trees(document):
        if tree["categories_nodes"]:
            return tree
    raise AssertionError("no categorical split in the base model")


def _unchanged(document: Document) -> None:
    return None


CASES = (
    ModelCase("far split feature (50,000,000)", _far_feature, sample=True),
    ModelCase("negative split feature", _negative_feature),
    ModelCase("right child != left child + 1", _swapped_children, sample=True),
    ModelCase("children out of range", _child_out_of_range, sample=True),
    ModelCase("negative child", _child_negative),
    ModelCase("cycle", _cycle, sample=True),
    ModelCase("self loop", _self_loop),
    ModelCase("tree_info group 7 of 1", _bad_group, sample=True),
    ModelCase("tree_info group -1", _negative_group),
    ModelCase("best_iteration -5", _best_iteration(-5), sample=True),
    ModelCase("best_iteration 1,000,000", _best_iteration(1_000_000)),
    ModelCase("declares 1,000,000 features", _wide, refused=None, sample=True),
    ModelCase("declares 100,000,000 nodes", _declared_nodes),
    ModelCase("category node out of range", _bogus_category_node, categorical=True),
    ModelCase("category segment out of range", _bogus_category_segment, categorical=True),
    ModelCase("category size out of range", _bogus_category_size, categorical=True),
    ModelCase("category 2,000,000,000", _huge_category, categorical=True, sample=True),
    ModelCase(
        "categorical model, unedited", _unchanged, refused=False, categorical=True, timed=False
    ),
    ModelCase("numerical model, unedited", _unchanged, refused=False, timed=False),
)


def case_document(case: ModelCase) -> Document:
    document = base_document(case.categorical)
    case.edit(document)
    return document
