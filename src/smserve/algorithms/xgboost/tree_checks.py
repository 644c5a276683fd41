"""The structure checks of a model's trees, vectorised over all their nodes at once (no loop per
node or per tree; only trees with categorical splits are checked one by one).

A tree XGBoost can walk safely: every split's children inside the tree and after it (so no
walk can cycle), its right child its left child + 1 (XGBoost's CPU predictor takes the right
branch as ``left + 1`` and never reads ``right_children``), no node the child of two, each
child naming its parent (approximate contributions walk up through ``parents``), split
features below the model's feature count, split types 0 or 1, and the categories of
categorical splits where their segments say, each a whole category a float32 holds exactly.
``InvalidTree`` names the first node that breaks a rule and the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

LEAF = -1
NUMERICAL, CATEGORICAL = 0, 1
MAX_CATEGORY = (1 << 24) - 1  # beyond it a float32 feature cannot hold the category exactly


class InvalidTree(Exception):
    """``node`` (of ``tree``, when known) breaks a rule, ``detail`` says which."""

    def __init__(self, node: int | None, detail: str, tree: int | None = None) -> None:
        super().__init__(detail)
        self.node = node
        self.detail = detail
        self.tree = tree


@dataclass(frozen=True, slots=True)
class Categories:
    """A tree's categorical splits as XGBoost writes them: for each listed node, its
    categories are ``values[segment : segment + size]``."""

    nodes: np.ndarray
    segments: np.ndarray
    sizes: np.ndarray
    values: np.ndarray


@dataclass(frozen=True, slots=True)
class TreeArrays:
    """Trees' integer node arrays (int64), as the model file declares them, one tree's or
    several trees' one after another (``starts``: each tree's first node, then the total),
    children and parents numbered within their tree."""

    left: np.ndarray
    right: np.ndarray
    parents: np.ndarray
    features: np.ndarray
    split_type: np.ndarray
    categories: Categories
    leaf_slots: int | None = None  # vector-leaf trees: a leaf's right child is its slot
    starts: np.ndarray | None = None  # None: one tree

    @property
    def n_nodes(self) -> int:
        return int(self.left.size)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per node: its number within its tree, and its tree's node count."""
        starts = np.array([0, self.n_nodes]) if self.starts is None else self.starts
        sizes = np.diff(starts)
        first = np.repeat(starts[:-1], sizes)
        return np.arange(self.n_nodes) - first, np.repeat(sizes, sizes)

    def located(self, node: int) -> tuple[int | None, int]:
        """(tree, node within it) of ``node``; tree None for one tree."""
        if self.starts is None:
            return None, node
        tree = int(np.searchsorted(self.starts, node, side="right") - 1)
        return tree, node - int(self.starts[tree])


def check_tree(tree: TreeArrays, n_features: int) -> None:
    """Raise InvalidTree for the first node that breaks a rule of the module doc (categories
    are checked per tree by ``check_categories``)."""
    if tree.leaf_slots is None and _sound(tree, n_features):
        return
    local, sizes = tree.bounds()
    _check_children(tree, local, sizes)
    _check_parents(tree, local)
    _check_features(tree, n_features)


def _sound(tree: TreeArrays, n_features: int) -> bool:
    """Whether a scalar-leaf forest keeps every rule, in a few passes over its splits: each
    split's children inside its tree, after it and adjacent, each naming the split as its
    parent (which also rules out a node with two parents), its feature in range; every leaf's
    right child -1; no categorical split (their trees are checked as below). When not, the
    checks below find and name the first node at fault."""
    starts = np.array([0, tree.n_nodes]) if tree.starts is None else tree.starts
    kinds = tree.split_type
    if tree.n_nodes >= 2**31 - 1 or np.any(kinds != NUMERICAL):
        return False
    if np.any(tree.right[tree.left == LEAF] != LEAF):
        return False
    starts = starts.astype(np.int32)
    splits = np.flatnonzero(tree.left != LEAF).astype(np.int32)
    owner = np.repeat(np.arange(starts.size - 1, dtype=np.int32), np.diff(starts))[splits]
    first = starts[owner]
    local, size = splits - first, starts[owner + 1] - first
    left = tree.left[splits]  # compared within its tree: no sum here can wrap
    inside = (left > local) & (left < size - 1) & (tree.right[splits] == left + 1)
    if not np.all(inside):
        return False
    left = left + first  # numbered in the forest, now known to be inside it
    features = tree.features[splits]
    return bool(
        np.all(tree.parents[left] == local)
        and np.all(tree.parents[left + 1] == local)
        and np.all((features >= 0) & (features < n_features))
    )


def _first(tree: TreeArrays, mask: np.ndarray, describe: Callable[[int], str]) -> None:
    if mask.any():
        node = int(np.argmax(mask))
        where, local = tree.located(node)
        raise InvalidTree(local, describe(node), where)


def _check_children(tree: TreeArrays, local: np.ndarray, sizes: np.ndarray) -> None:
    left, right = tree.left, tree.right
    split = left != LEAF

    def outside(which: str, child: np.ndarray) -> Callable[[int], str]:
        return lambda i: f"{which} child {child[i]} is outside the tree's {sizes[i]} nodes"

    _first(tree, split & ((left < 0) | (left >= sizes)), outside("left", left))
    _first(tree, split & ((right < 0) | (right >= sizes)), outside("right", right))
    if tree.leaf_slots is None:
        stray = ~split & (right != LEAF)
    else:  # a leaf's right child is its row of leaf_weights
        stray = ~split & ((right < 0) | (right >= tree.leaf_slots))
    _first(tree, stray, lambda i: f"a leaf (left child -1) with right child {right[i]}")
    _first(
        tree,
        split & (left <= local),
        lambda i: f"left child {left[i]} is not after the node (a cycle, or a shared subtree)",
    )
    _first(
        tree,
        split & (right != left + 1),
        lambda i: (
            f"right child {right[i]} is not its left child + 1 ({left[i] + 1}), as "
            "XGBoost's predictor assumes"
        ),
    )
    first = (np.arange(tree.n_nodes) - local)[split]
    children = np.concatenate((left[split] + first, right[split] + first))
    twice = np.bincount(children, minlength=tree.n_nodes) > 1
    _first(tree, twice, lambda i: "is the child of more than one node")


def _check_parents(tree: TreeArrays, local: np.ndarray) -> None:
    splits = np.flatnonzero(tree.left != LEAF)
    first = splits - local[splits]  # each split's tree's first node
    for side in (tree.left, tree.right):
        named = np.full(tree.n_nodes, -2, dtype=np.int64)
        named[splits] = tree.parents[side[splits] + first]
        wrong = np.zeros(tree.n_nodes, dtype=bool)
        wrong[splits] = named[splits] != local[splits]
        _first(tree, wrong, _names_parent(side, named))


def _names_parent(side: np.ndarray, named: np.ndarray) -> Callable[[int], str]:
    return lambda i: f"its child {side[i]} names node {named[i]} as its parent"


def _check_features(tree: TreeArrays, n_features: int) -> None:
    split, features = tree.left != LEAF, tree.features
    _first(
        tree,
        split & ((features < 0) | (features >= n_features)),
        lambda i: f"splits on feature {features[i]}, outside the model's {n_features} features",
    )
    kinds = tree.split_type
    _first(
        tree,
        (kinds != NUMERICAL) & (kinds != CATEGORICAL),
        lambda i: f"split type {kinds[i]} is neither numerical (0) nor categorical (1)",
    )
    _first(tree, ~split & (kinds == CATEGORICAL), lambda _: "a leaf with a categorical split type")


def check_categories(tree: TreeArrays) -> None:
    """One tree's categorical splits: listed once each, in order, every categorical split listed,
    segments inside the category list, categories whole, 0 .. MAX_CATEGORY."""
    cats, n = tree.categories, tree.n_nodes
    counts = {cats.nodes.size, cats.segments.size, cats.sizes.size}
    if len(counts) != 1:
        raise InvalidTree(None, "categories_nodes, _segments and _sizes differ in length")
    nodes = cats.nodes
    if nodes.size and (nodes.min() < 0 or nodes.max() >= n):
        raise InvalidTree(None, f"categories_nodes names a node outside the tree's {n} nodes")
    if nodes.size > 1 and np.any(np.diff(nodes) <= 0):
        raise InvalidTree(None, "categories_nodes is not in increasing order")
    listed = np.zeros(n, dtype=bool)
    listed[nodes] = True
    _first(tree, listed != (tree.split_type == CATEGORICAL), _listing_problem(listed))
    end = cats.segments + cats.sizes
    bad = (cats.segments < 0) | (cats.sizes < 0) | (end > cats.values.size)
    _first_listed(bad, nodes, f"its categories are outside the {cats.values.size} listed")
    values = cats.values
    if values.size and (values.min() < 0 or values.max() > MAX_CATEGORY):
        wrong = int(values[(values < 0) | (values > MAX_CATEGORY)][0])
        raise InvalidTree(None, f"category {wrong} is outside 0 .. {MAX_CATEGORY}")


def _listing_problem(listed: np.ndarray) -> Callable[[int], str]:
    def describe(node: int) -> str:
        if listed[node]:
            return "is listed in categories_nodes but is not a categorical split"
        return "is a categorical split missing from categories_nodes"

    return describe


def _first_listed(bad: np.ndarray, nodes: np.ndarray, detail: str) -> None:
    if bad.any():
        raise InvalidTree(int(nodes[int(np.argmax(bad))]), detail)


def largest_category(tree: TreeArrays) -> int:
    """The largest category of the tree's splits (-1 without any)."""
    values = tree.categories.values
    return int(values.max()) if values.size else -1
