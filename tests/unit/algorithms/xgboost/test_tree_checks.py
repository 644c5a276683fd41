"""The structure checks of ``tree_checks``: the few-pass check of a sound forest (``_sound``)
passes exactly the forests the detailed checks pass, over random trees and thousands of
single-field corruptions of them, so the detailed checks still name the node at fault."""

from __future__ import annotations

import numpy as np
import pytest

from smserve.algorithms.xgboost import tree_checks
from smserve.algorithms.xgboost.tree_checks import (
    LEAF,
    Categories,
    InvalidTree,
    TreeArrays,
    _sound,
    check_tree,
)

N_FEATURES = 8
NONE = np.zeros(0, dtype=np.int64)
FIELDS = ("left", "right", "parents", "features", "split_type")


def _random_tree(rng: np.random.Generator, n_splits: int) -> dict[str, list[int]]:
    """A tree as XGBoost lays one out: children allocated in pairs, after their parent."""
    left, right, parents = [LEAF], [LEAF], [2**31 - 1]
    leaves = [0]
    for _ in range(n_splits):
        node = leaves.pop(int(rng.integers(len(leaves))))
        child = len(left)
        left[node], right[node] = child, child + 1
        left += [LEAF, LEAF]
        right += [LEAF, LEAF]
        parents += [node, node]
        leaves += [child, child + 1]
    features = [int(rng.integers(N_FEATURES)) if child != LEAF else 0 for child in left]
    return {
        "left": left,
        "right": right,
        "parents": parents,
        "features": features,
        "split_type": [0] * len(left),
    }


def _forest(trees: list[dict[str, list[int]]], dtype: type) -> TreeArrays:
    joined = {key: np.concatenate([np.array(t[key], dtype=dtype) for t in trees]) for key in FIELDS}
    starts = np.cumsum([0, *(len(t["left"]) for t in trees)])
    empty = Categories(NONE, NONE, NONE, NONE)
    return TreeArrays(**joined, categories=empty, starts=starts)


def _corrupted(rng: np.random.Generator, trees: list[dict[str, list[int]]]) -> None:
    tree = trees[int(rng.integers(len(trees)))]
    key = FIELDS[int(rng.integers(len(FIELDS)))]
    node = int(rng.integers(len(tree[key])))
    choices = (-(2**31), -2, -1, 0, 1, node, node + 1, len(tree[key]), 2**31 - 1, N_FEATURES)
    tree[key][node] = int(rng.choice(choices)) if rng.random() < 0.7 else int(rng.integers(-3, 40))


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=["ubjson", "json"])
def test_the_fast_check_passes_only_what_the_detailed_checks_pass(dtype: type) -> None:
    rng = np.random.default_rng(5)
    verdicts = set()
    for _ in range(3000):
        trees = [_random_tree(rng, int(rng.integers(0, 12))) for _ in range(3)]
        if rng.random() < 0.8:
            _corrupted(rng, trees)
        forest = _forest(trees, dtype)
        sound = _sound(forest, N_FEATURES)
        detailed = _detailed_checks_pass(forest)
        assert not sound or detailed, "the fast check passed a forest the checks refuse"
        if not np.any(forest.split_type):  # categorical splits: always the detailed checks
            assert sound == detailed, "a forest the checks pass, not passed by the fast check"
            verdicts.add(sound)
    assert verdicts == {True, False}


def _detailed_checks_pass(forest: TreeArrays) -> bool:
    """The detailed checks alone (what ``check_tree`` runs when ``_sound`` says no)."""
    slow = TreeArrays(*(getattr(forest, f) for f in FIELDS), forest.categories, None, forest.starts)
    try:
        local, sizes = slow.bounds()
        tree_checks._check_children(slow, local, sizes)
        tree_checks._check_parents(slow, local)
        tree_checks._check_features(slow, N_FEATURES)
        return True
    except InvalidTree:
        return False


def test_a_child_index_at_the_int32_limit_is_refused_naming_it() -> None:
    tree = {
        "left": [2**31 - 1, LEAF, LEAF],
        "right": [-(2**31), LEAF, LEAF],
        "parents": [2**31 - 1, 0, 0],
        "features": [0, 0, 0],
        "split_type": [0, 0, 0],
    }
    with pytest.raises(InvalidTree, match="left child 2147483647 is outside the tree's 3 nodes"):
        check_tree(_forest([tree], np.int32), N_FEATURES)
