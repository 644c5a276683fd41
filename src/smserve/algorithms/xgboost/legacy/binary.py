"""Reading XGBoost's legacy binary model format (``Booster.save_model`` from 0.90 to 2.0, and
the handle inside 0.90 to 1.2 pickles), which XGBoost 3.1 and later no longer read. Layout
(little-endian; wave4-facts §3): an optional ``binf`` header (1.1+); LearnerModelParam (136
bytes); the objective and booster names; the booster's model; then, when flagged, the
attributes. Node arrays are read as numpy views of the file's bytes: no loop over nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from smserve.algorithms.xgboost.legacy.reader import MAX_NAME_BYTES, Cursor

BINF = b"binf"
MAX_TREES = 10_000_000
MAX_GROUPS = 1_000_000
MAX_FEATURES = 2**31 - 1

LEARNER_PARAM = np.dtype(
    [
        ("base_score", "<f4"),
        ("num_feature", "<u4"),
        ("num_class", "<i4"),
        ("contain_extra_attrs", "<i4"),
        ("contain_eval_metrics", "<i4"),
        ("major_version", "<u4"),
        ("minor_version", "<u4"),
        ("num_target", "<u4"),
        ("boost_from_average", "<i4"),
        ("reserved", "<i4", 25),
    ]
)
LEARNER_NAMES = tuple(LEARNER_PARAM.fields or ())
GBTREE_PARAM = np.dtype(
    [
        ("num_trees", "<i4"),
        ("num_parallel_tree", "<i4"),  # num_roots (always 1) before 1.6
        ("num_feature", "<i4"),
        ("pad", "<i4"),
        ("num_pbuffer", "<i8"),
        ("num_output_group", "<i4"),
        ("size_leaf_vector", "<i4"),
        ("reserved", "<i4", 32),
    ]
)
TREE_PARAM = np.dtype(
    [
        ("num_roots", "<i4"),
        ("num_nodes", "<i4"),
        ("num_deleted", "<i4"),
        ("max_depth", "<i4"),
        ("num_feature", "<i4"),
        ("size_leaf_vector", "<i4"),
        ("reserved", "<i4", 31),
    ]
)
NODE = np.dtype(
    [("parent", "<i4"), ("left", "<i4"), ("right", "<i4"), ("sindex", "<u4"), ("info", "<f4")]
)
STAT = np.dtype(
    [("loss_chg", "<f4"), ("sum_hess", "<f4"), ("base_weight", "<f4"), ("leaf_child_cnt", "<i4")]
)
LINEAR_PARAM = np.dtype(
    [("num_feature", "<u4"), ("num_output_group", "<i4"), ("reserved", "<i4", 32)]
)
F32 = np.dtype("<f4")
I32 = np.dtype("<i4")


@dataclass
class Trees:
    """Each tree's nodes, stats and parameters: views of the file's bytes, not copies."""

    nodes: list[np.ndarray]  # NODE records
    stats: list[np.ndarray]  # STAT records
    params: list[np.void]  # TREE_PARAM records
    tree_info: np.ndarray  # int32, one output group per tree
    num_parallel_tree: int
    num_output_group: int


@dataclass
class LegacyModel:
    """What a legacy binary file holds."""

    has_binf: bool
    param: np.void  # a LEARNER_PARAM record
    objective: str
    booster: str
    trees: Trees | None = None  # gbtree and dart
    weight_drop: np.ndarray | None = None  # dart
    linear_weights: np.ndarray | None = None  # gblinear, [f * groups + g], bias last
    linear_groups: int = 1
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def version(self) -> tuple[int, int]:
        """(major, minor) of the XGBoost that wrote it; (0, 0) before 1.0."""
        return int(self.param["major_version"]), int(self.param["minor_version"])


def looks_legacy(data: bytes) -> bool:
    """Whether ``data`` starts like a legacy binary model: ``binf``, or a plausible learner
    parameter block followed by a short objective name."""
    if data.startswith(BINF):
        return True
    size = LEARNER_PARAM.itemsize
    if len(data) < size + 8:
        return False
    name_length = int.from_bytes(data[size : size + 8], "little")
    if not 0 < name_length <= MAX_NAME_BYTES or len(data) < size + 8 + name_length:
        return False
    name = data[size + 8 : size + 8 + name_length]
    return b":" in name and name.replace(b":", b"").replace(b"_", b"").isalnum()


def read(path: Path, data: bytes) -> LegacyModel:
    """Parse ``data`` (the file ``path``); ModelLoadError naming the offset and field."""
    has_binf = data.startswith(BINF)
    cursor = Cursor(path, data, len(BINF) if has_binf else 0)
    param = cursor.array(LEARNER_PARAM, 1, "LearnerModelParam")[0]
    if int(param["major_version"]) == 0:  # 0.90: everything after byte 20 is reserved
        param = _zero_after_eval_metrics(param)
    model = LegacyModel(
        has_binf,
        param,
        objective=cursor.text("objective name", MAX_NAME_BYTES),
        booster=cursor.text("booster name", MAX_NAME_BYTES),
    )
    _read_booster(cursor, model)
    if int(param["contain_extra_attrs"]) != 0:
        model.attributes = cursor.pairs("attributes")
    return model  # 0.90 may append metric names after the attributes: not needed


def _zero_after_eval_metrics(param: np.void) -> np.void:
    copy = np.zeros(1, dtype=LEARNER_PARAM)
    for name in LEARNER_NAMES[:5]:  # base_score ... contain_eval_metrics
        copy[0][name] = param[name]
    record: np.void = copy[0]
    return record


def _read_booster(cursor: Cursor, model: LegacyModel) -> None:
    # From 1.0 the boosters' own group counts are deprecated and 0: the learner's count it
    outputs = max(1, int(model.param["num_class"]), int(model.param["num_target"]))
    if model.booster in ("gbtree", "dart"):
        model.trees = read_trees(cursor, outputs)
        if model.booster == "dart" and model.trees.nodes:
            model.weight_drop = cursor.vector(F32, "dart weight_drop")
            if model.weight_drop.size != len(model.trees.nodes):
                raise cursor.fail(
                    "dart weight_drop",
                    f"{model.weight_drop.size} weights for {len(model.trees.nodes)} trees",
                )
    elif model.booster == "gblinear":
        features = int(model.param["num_feature"])
        model.linear_weights, model.linear_groups = _read_linear(cursor, outputs, features)
    else:
        raise cursor.fail("booster name", f"unknown booster {model.booster!r}")


def read_trees(cursor: Cursor, outputs: int) -> Trees:
    param = cursor.array(GBTREE_PARAM, 1, "GBTreeModelParam")[0]
    num_trees, groups = int(param["num_trees"]), int(param["num_output_group"]) or outputs
    if not 0 <= num_trees <= min(MAX_TREES, cursor.remaining // TREE_PARAM.itemsize):
        raise cursor.fail("GBTreeModelParam.num_trees", f"{num_trees} trees cannot be here")
    if not 1 <= groups <= MAX_GROUPS:
        raise cursor.fail("GBTreeModelParam.num_output_group", f"{groups} is out of range")
    params, nodes, stats = [], [], []
    for index in range(num_trees):
        tree_param, tree_nodes, tree_stats = _read_tree(cursor, index)
        params.append(tree_param[0])
        nodes.append(tree_nodes)
        stats.append(tree_stats)
    tree_info = cursor.array(I32, num_trees, "tree_info") if num_trees else np.zeros(0, I32)
    return Trees(
        nodes=nodes,
        stats=stats,
        params=params,
        tree_info=tree_info,
        num_parallel_tree=max(1, int(param["num_parallel_tree"])),
        num_output_group=groups,
    )


def _read_tree(cursor: Cursor, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    param = cursor.array(TREE_PARAM, 1, f"tree {index} TreeParam")
    num_nodes = int(param[0]["num_nodes"])
    if not 1 <= num_nodes <= cursor.remaining // (NODE.itemsize + STAT.itemsize):
        raise cursor.fail(f"tree {index} TreeParam.num_nodes", f"{num_nodes} nodes cannot be here")
    if int(param[0]["size_leaf_vector"]) > 1:
        raise cursor.fail(f"tree {index} TreeParam.size_leaf_vector", "vector leaves")
    nodes = cursor.array(NODE, num_nodes, f"tree {index} nodes")
    return param, nodes, cursor.array(STAT, num_nodes, f"tree {index} node stats")


def _read_linear(cursor: Cursor, outputs: int, features: int) -> tuple[np.ndarray, int]:
    """The weights, (features + 1) x groups of them (the learner's feature count: from 1.0
    the booster's own is 0)."""
    param = cursor.array(LINEAR_PARAM, 1, "GBLinearModelParam")[0]
    groups = int(param["num_output_group"]) or outputs
    if not 1 <= groups <= MAX_GROUPS:
        raise cursor.fail("GBLinearModelParam.num_output_group", f"{groups} is out of range")
    weights = cursor.vector(F32, "gblinear weights")
    expected = (max(features, int(param["num_feature"])) + 1) * groups
    if weights.size != expected:
        raise cursor.fail("gblinear weights", f"{weights.size} weights, expected {expected}")
    return weights, groups
