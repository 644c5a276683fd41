"""Writing XGBoost vector-leaf (multi-target) trees whose leaves hold the approximate
contributions' per-leaf sums (see ``xgboost.approximate``, which checks the result).

Each written tree has the splits of a source tree (scalar leaves, JSON as
``Booster.save_raw("json")`` gives it); a leaf's vector is, per feature, the sum along its
path of the change in the expected value (cover-weighted mean leaf value) each split on that
feature makes, then the root's expected value as the bias. The layout is XGBoost 3's:
``leaf_weights`` in leaf order, each leaf's index in its ``right_children`` entry.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import xgboost as xgb


def vector_leaf_booster(trees: list[Any], n_features: int, nthread: int) -> xgb.Booster:
    written = [_vector_tree(tree, n_features, index) for index, tree in enumerate(trees)]
    booster = xgb.Booster()
    booster.load_model(
        bytearray(orjson.dumps(_document(written, n_features), option=orjson.OPT_SERIALIZE_NUMPY))
    )
    booster.set_param({"nthread": nthread})
    return booster


def _document(trees: list[dict[str, Any]], n_features: int) -> dict[str, Any]:
    width = n_features + 1
    model = {
        "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(len(trees))},
        "iteration_indptr": list(range(len(trees) + 1)),
        "tree_info": [0] * len(trees),
        "trees": trees,
    }
    params = {
        "base_score": "[" + ",".join(["0E0"] * width) + "]",
        "boost_from_average": "0",
        "num_class": "0",
        "num_feature": str(n_features),
        "num_target": str(width),
    }
    learner = {
        "attributes": {},
        "feature_names": [],
        "feature_types": [],
        "gradient_booster": {"model": model, "name": "gbtree"},
        "learner_model_param": params,
        "objective": {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}},
    }
    return {"learner": learner, "version": [int(p) for p in xgb.__version__.split(".")[:3]]}


def _vector_tree(tree: dict[str, Any], n_features: int, index: int) -> dict[str, Any]:
    left = np.asarray(tree["left_children"], dtype=np.int32)
    right = np.asarray(tree["right_children"], dtype=np.int32)
    n_nodes = len(left)
    sums, leaves = path_sums(tree, n_features)
    mapped = right.copy()
    mapped[leaves] = np.arange(len(leaves), dtype=np.int32)
    return {
        "base_weights": np.zeros(n_nodes, dtype=np.float32),  # internal nodes: unused here
        "leaf_weights": sums[leaves].astype(np.float32).ravel(),
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": tree["default_left"],
        "id": index,
        "left_children": left,
        "right_children": mapped,
        "loss_changes": np.zeros(n_nodes, dtype=np.float32),
        "parents": tree["parents"],
        "split_conditions": tree["split_conditions"],
        "split_indices": tree["split_indices"],
        "split_type": [0] * n_nodes,
        "sum_hessian": tree["sum_hessian"],
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(n_features),
            "num_nodes": str(n_nodes),
            "size_leaf_vector": str(n_features + 1),
        },
    }


def path_sums(tree: dict[str, Any], n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the approximation's credits summed from the root to it, (nodes, F + 1)
    float64; and the leaves' node ids in ascending order."""
    left, right = tree["left_children"], tree["right_children"]
    split, order = tree["split_indices"], _top_down(left, right)
    mean = _expected_values(tree, order)
    sums = np.zeros((len(left), n_features + 1))
    sums[0, n_features] = mean[0]
    for node in order:
        if left[node] != -1:
            for child in (left[node], right[node]):
                sums[child] = sums[node]
                sums[child, split[node]] += mean[child] - mean[node]
    leaves = np.array(sorted(n for n in order if left[n] == -1), dtype=np.int64)
    return sums, leaves


def _top_down(left: list[int], right: list[int]) -> list[int]:
    """The nodes reachable from the root, each after its parent."""
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if left[node] != -1:
            stack.extend((left[node], right[node]))
    return order


def _expected_values(tree: dict[str, Any], order: list[int]) -> np.ndarray:
    """Each node's cover-weighted mean leaf value (a leaf's own value), as XGBoost's
    approximation defines it."""
    left, right = tree["left_children"], tree["right_children"]
    value, cover = tree["split_conditions"], tree["sum_hessian"]
    mean = np.zeros(len(left))
    for node in reversed(order):
        if left[node] == -1:
            mean[node] = value[node]
        else:
            a, b = left[node], right[node]
            mean[node] = (mean[a] * cover[a] + mean[b] * cover[b]) / cover[node]
    return mean
