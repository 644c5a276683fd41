"""The C Forest refuses node arrays a walk could leave, and input it cannot read."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from smserve.algorithms.xgboost.fast_trees import IDENTITY, NODE

Forest = pytest.importorskip("smserve.algorithms.xgboost._fast").Forest


def _stump() -> np.ndarray:
    """One split on feature 1 at 0.5 (missing values go left), leaves -1 and +1."""
    nodes = np.zeros(3, dtype=NODE)
    nodes[0] = (0.5, 1 | (1 << 31), 1, 2)
    nodes[1] = (-1.0, 0, -1, -1)
    nodes[2] = (1.0, 0, -1, -1)
    return nodes


def _forest(nodes: np.ndarray, n_features: int = 2, groups: tuple[int, ...] = (0,)) -> object:
    starts = np.array([0, len(nodes)], dtype=np.int32)
    base = np.zeros(max(groups) + 1, dtype=np.float32)
    return Forest(nodes, starts, np.array(groups, dtype=np.int32), base, n_features, IDENTITY)


def test_a_valid_stump_walks_as_xgboost_would() -> None:
    forest = _forest(_stump())
    rows = np.array([[9, 0.4], [9, 0.5], [9, np.nan], [9, np.inf]], dtype=np.float32)
    out = np.empty(4, dtype=np.float32)
    forest.predict(rows, out, True)
    assert out.tolist() == [-1.0, 1.0, -1.0, 1.0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"left": 0}, "before its parent"),  # a cycle
        ({"right": 3}, "outside its tree"),
        ({"left": -5}, "outside its tree"),
        ({"feature": 2}, "feature the model does not have"),
    ],
)
def test_arrays_a_walk_could_leave_are_refused(change: dict[str, int], message: str) -> None:
    nodes = _stump()
    for field, value in change.items():
        nodes[field][0] = value
    with pytest.raises(ValueError, match=message):
        _forest(nodes)


def test_groups_starts_and_sizes_are_checked() -> None:
    nodes = _stump()
    with pytest.raises(ValueError, match="output group"):
        Forest(
            nodes,
            np.array([0, 3], np.int32),
            np.array([1], np.int32),
            np.zeros(1, np.float32),
            2,
            0,
        )
    with pytest.raises(ValueError, match="span the nodes"):
        Forest(
            nodes,
            np.array([0, 2], np.int32),
            np.array([0], np.int32),
            np.zeros(1, np.float32),
            2,
            0,
        )
    with pytest.raises(ValueError, match="whole number"):
        Forest(
            nodes.tobytes()[:-1],
            np.array([0, 3], np.int32),
            np.array([0], np.int32),
            np.zeros(1, np.float32),
            2,
            0,
        )
    with pytest.raises(ValueError, match="transform"):
        Forest(
            nodes,
            np.array([0, 3], np.int32),
            np.array([0], np.int32),
            np.zeros(1, np.float32),
            2,
            99,
        )


def test_an_uninitialised_forest_refuses_to_predict() -> None:
    forest = Forest.__new__(Forest)
    with pytest.raises(ValueError, match="not initialised"):
        forest.predict(np.zeros((1, 2), np.float32), np.empty(1, np.float32), False)


def test_input_it_cannot_read_is_refused() -> None:
    forest = _forest(_stump())
    out = np.empty(2, dtype=np.float32)
    with pytest.raises(ValueError, match="n_features"):
        forest.predict(np.zeros((2, 3), np.float32), out, False)
    with pytest.raises(ValueError, match="n_features"):
        forest.predict(np.zeros((2, 2), np.float64), out, False)
    with pytest.raises(ValueError, match="wrong size"):
        forest.predict(np.zeros((3, 2), np.float32), out, False)
    wide = sp.csr_matrix(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match="column out of range"):
        forest.predict_csr(wide.indptr, wide.indices, wide.data, 2, out, False)
    bad = np.array([0, 2, 1], dtype=wide.indptr.dtype)
    with pytest.raises(ValueError, match="indptr"):
        forest.predict_csr(bad, wide.indices[:2], wide.data[:2], 2, out, False)
    with pytest.raises(ValueError, match="int32 or int64"):
        forest.predict_csr(wide.indptr, wide.indices.astype(np.int16), wide.data, 2, out, False)
