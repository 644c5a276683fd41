"""The legacy binary reader and the restricted unpickler, on files written here: a stump in
the legacy layout converts and predicts its leaves; hostile counts and truncations are refused
naming the file, the field and the byte, before anything is sized by them; a pickle that would
run code never runs without the opt-in. (The real old releases' files: test_legacy_artifacts.)
"""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms.xgboost.legacy import binary
from smserve.algorithms.xgboost.model import load_member
from smserve.errors import ModelLoadError


def _text(value: bytes) -> bytes:
    return struct.pack("<Q", len(value)) + value


def legacy_stump(
    version: tuple[int, int] = (1, 7),
    base_score: float = 0.5,
    objective: bytes = b"reg:squarederror",
    num_trees: int | None = None,
    num_nodes: int = 3,
    attributes: dict[bytes, bytes] | None = None,
    drops: int | None = None,
) -> bytes:
    """A legacy binary gbtree model (dart with ``drops`` weights): one stump, f0 < 0.5 -> -1
    (NaN goes left) else +1."""
    learner = np.zeros(1, binary.LEARNER_PARAM)
    learner[0]["base_score"], learner[0]["num_feature"] = base_score, 2
    learner[0]["major_version"], learner[0]["minor_version"] = version
    learner[0]["contain_extra_attrs"] = 1 if attributes else 0
    gbtree = np.zeros(1, binary.GBTREE_PARAM)
    gbtree[0]["num_trees"] = 1 if num_trees is None else num_trees
    gbtree[0]["num_output_group"] = 1
    tree = np.zeros(1, binary.TREE_PARAM)
    tree[0]["num_nodes"], tree[0]["num_feature"] = num_nodes, 2
    nodes = np.zeros(3, binary.NODE)
    nodes["parent"] = [-1, -(2**31), 0]  # bit 31: the left child
    nodes["left"], nodes["right"] = [1, -1, -1], [2, -1, -1]
    nodes["sindex"] = [0 | (1 << 31), 0, 0]
    nodes["info"] = [0.5, -1.0, 1.0]
    stats = np.zeros(3, binary.STAT)
    booster = b"gbtree" if drops is None else b"dart"
    parts = [b"binf", learner.tobytes(), _text(objective), _text(booster), gbtree.tobytes()]
    parts += [tree.tobytes(), nodes.tobytes(), stats.tobytes(), np.int32([0]).tobytes()]
    if drops is not None:
        parts.append(struct.pack("<Q", drops) + np.ones(drops, np.float32).tobytes())
    if attributes:
        parts.append(struct.pack("<Q", len(attributes)))
        parts += [_text(k) + _text(v) for k, v in attributes.items()]
    return b"".join(parts)


def _load(tmp_path: Path, data: bytes, allow_pickle: bool = False) -> np.ndarray:
    path = tmp_path / "xgboost-model"
    path.write_bytes(data)
    member = load_member(path, allow_pickle)
    rows = np.array([[0.2, 0.0], [0.7, 0.0], [np.nan, 0.0]], dtype=np.float32)
    return np.asarray(member.booster.inplace_predict(rows, iteration_range=member.iteration_range))


def test_a_legacy_stump_predicts_its_leaves(tmp_path: Path) -> None:
    np.testing.assert_array_equal(_load(tmp_path, legacy_stump()), np.float32([-0.5, 1.5, -0.5]))


def test_a_legacy_dart_stump_predicts_its_leaves(tmp_path: Path) -> None:
    data = legacy_stump(drops=1)
    np.testing.assert_array_equal(_load(tmp_path, data), np.float32([-0.5, 1.5, -0.5]))


def test_a_pre_1_0_base_score_is_a_margin(tmp_path: Path) -> None:
    """0.90 stored the logistic base_score as a margin: 0 means probability 0.5."""
    data = legacy_stump((0, 0), 0.0, b"binary:logistic")[4:]  # and no binf header
    expected = 1 / (1 + np.exp(-np.float32([-1.0, 1.0, -1.0])))
    np.testing.assert_allclose(_load(tmp_path, data), expected, rtol=1e-6)


def test_attributes_survive_and_internal_ones_go(tmp_path: Path) -> None:
    attributes = {b"best_iteration": b"0", b"SAVED_PARAM_eta": b"0.3", b"note": b"x"}
    path = tmp_path / "xgboost-model"
    path.write_bytes(legacy_stump(attributes=attributes))
    booster = load_member(path, False).booster
    assert booster.attributes() == {"best_iteration": "0", "note": "x"}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (legacy_stump(num_trees=2_000_000_000), "GBTreeModelParam.num_trees"),
        (legacy_stump(num_nodes=2_000_000_000), "tree 0 TreeParam.num_nodes"),
        (legacy_stump(attributes={b"k": b"v"})[:-3], "attributes"),
        (legacy_stump()[:100], "LearnerModelParam"),
        (legacy_stump()[:-4], "tree_info"),
        (legacy_stump(drops=3), "dart weight_drop"),
    ],
    ids=["trees", "nodes", "attribute", "learner", "tree_info", "weight_drop"],
)
def test_hostile_or_truncated_files_are_refused_naming_field_and_byte(
    tmp_path: Path, data: bytes, field: str
) -> None:
    with pytest.raises(ModelLoadError, match=rf"xgboost-model .*{field} at byte \d+"):
        _load(tmp_path, data)


def test_a_huge_declared_string_is_refused_before_it_is_read(tmp_path: Path) -> None:
    data = bytearray(legacy_stump())
    offset = 4 + binary.LEARNER_PARAM.itemsize  # the objective name's length
    data[offset : offset + 8] = struct.pack("<Q", 2**62)
    with pytest.raises(ModelLoadError, match="is not an XGBoost model|objective name"):
        _load(tmp_path, bytes(data))


class _RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_that_runs_code_never_runs_without_the_opt_in(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(ModelLoadError, match=r"needs posix\.system.*SMSERVE_ALLOW_PICKLE=true"):
        _load(tmp_path, pickle.dumps(_RunsCode(marker)))
    assert not marker.exists()


def test_a_pickled_legacy_handle_is_read_without_the_opt_in(tmp_path: Path) -> None:
    """0.90's pickle: a Booster whose handle is the legacy binary (here rebuilt by hand with
    the same opcodes: the global xgboost.core.Booster, NEWOBJ, BUILD with the state dict)."""
    state = {"handle": bytearray(legacy_stump()), "feature_names": ["f0", "f1"]}
    data = pickle.dumps(state, protocol=3)
    booster_pickle = b"\x80\x03cxgboost.core\nBooster\nq\x00)\x81q\x01" + data[2:-1] + b"b."
    np.testing.assert_array_equal(_load(tmp_path, booster_pickle), np.float32([-0.5, 1.5, -0.5]))


def test_a_pickle_cannot_make_the_safe_reader_allocate_a_size(tmp_path: Path) -> None:
    """bytearray(2**40) in 30 bytes: refused, not a terabyte allocated."""
    bomb = b"\x80\x04cbuiltins\nbytearray\n\x8a\x06\x00\x00\x00\x00\x00\x01\x85R."
    with pytest.raises(ModelLoadError, match="cannot unpickle: bytearray.size"):
        _load(tmp_path, bomb)
