"""For any model the load-time checks admit, the fast predictor and XGBoost agree on every row,
bit for bit, at every batch size (1, 64 and 16,385 rows: XGBoost's one-row, one-block and
many-block paths). Trees are random and adversarial: nodes numbered in any order the checks
admit (children anywhere after their parent, the right one after the left), deep chains,
NaN, infinite, signed-zero and subnormal thresholds, default directions either way, and rows
with missing values at every split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.hostile.hostile_models import base_document, trees
from smserve.algorithms.xgboost import fast
from smserve.algorithms.xgboost.fast_trees import flat_trees
from smserve.algorithms.xgboost.validation import validate

pytestmark = pytest.mark.skipif(not fast.AVAILABLE, reason="the fast predictor is not built")

N_FEATURES = 5
BATCHES = (1, 64, 16385)
SPECIAL = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-45, -3.4e38]
thresholds = st.one_of(
    st.sampled_from(SPECIAL), st.floats(-3, 3, width=32, allow_nan=False, allow_infinity=False)
)


@st.composite
def tree(draw: st.DrawFn, index: int) -> dict[str, Any]:
    """A tree grown by splitting open leaves in a drawn order: the last (a deep chain), the
    first (breadth first) or any; each split's children are the next two node numbers."""
    left, right, parents = [-1], [-1], [2147483647]
    open_leaves = [0]
    for _ in range(draw(st.integers(0, 40))):
        how = draw(st.sampled_from(["deep", "wide", "any"]))
        pick = {"deep": len(open_leaves) - 1, "wide": 0}.get(how)
        if pick is None:
            pick = draw(st.integers(0, len(open_leaves) - 1))
        node = open_leaves.pop(pick)
        first = len(left)
        left[node], right[node] = first, first + 1
        left += [-1, -1]
        right += [-1, -1]
        parents += [node, node]
        open_leaves += [first, first + 1]
    n = len(left)
    split = [child != -1 for child in left]
    conditions = [draw(thresholds) if s else draw(st.floats(-1, 1, width=32)) for s in split]
    return {
        "base_weights": [0.0] * n,
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": [draw(st.integers(0, 1)) for _ in range(n)],
        "id": index,
        "left_children": left,
        "loss_changes": [0.0] * n,
        "parents": parents,
        "right_children": right,
        "split_conditions": conditions,
        "split_indices": [draw(st.integers(0, N_FEATURES - 1)) if s else 0 for s in split],
        "split_type": [0] * n,
        "sum_hessian": [1.0] * n,
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(N_FEATURES),
            "num_nodes": str(n),
            "size_leaf_vector": "1",
        },
    }


@st.composite
def model(draw: st.DrawFn) -> bytes:
    document = base_document(n_features=N_FEATURES)
    forest = [draw(tree(i)) for i in range(draw(st.integers(1, 4)))]
    gbtree = document["learner"]["gradient_booster"]["model"]
    gbtree["trees"] = forest
    gbtree["tree_info"] = [0] * len(forest)
    gbtree["iteration_indptr"] = list(range(len(forest) + 1))
    gbtree["gbtree_model_param"]["num_trees"] = str(len(forest))
    return json.dumps(document).encode()


def _rows(document: dict[str, Any], n: int, seed: int) -> np.ndarray:
    """Rows on, beside and away from the thresholds, with NaN and infinities everywhere."""
    rng = np.random.default_rng(seed)
    cuts = np.array(
        [c for t in trees(document) for c in t["split_conditions"]] + SPECIAL, dtype=np.float32
    )
    rows = rng.choice(cuts, size=(n, N_FEATURES)).astype(np.float32)
    step = rng.integers(-1, 2, size=rows.shape)
    with np.errstate(over="ignore"):  # one step beyond the largest float32 is infinity
        rows = np.where(step < 0, np.nextafter(rows, np.float32(-np.inf)), rows)
        rows = np.where(step > 0, np.nextafter(rows, np.float32(np.inf)), rows)
    rows[rng.random(rows.shape) < 0.3] = np.nan
    return rows


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=model(), seed=st.integers(0, 2**32 - 1))
def test_fast_predictor_and_xgboost_agree_on_every_row_and_batch(data: bytes, seed: int) -> None:
    validate(Path("xgboost-model"), data)  # the checks admit it
    booster = xgb.Booster()
    booster.load_model(bytearray(data))
    booster.set_param({"nthread": 2})
    predictor = fast.FastPredictor(flat_trees(booster, (0, 0)))
    rows = _rows(json.loads(data), max(BATCHES), seed)
    for size in BATCHES:
        batch = np.ascontiguousarray(rows[:size])
        for margin in (False, True):
            kind = "margin" if margin else "value"
            expected = booster.inplace_predict(batch, predict_type=kind, missing=np.nan)
            got = predictor.predict(batch, margin)
            differs = np.flatnonzero(got.view(np.uint32) != expected.view(np.uint32))
            assert differs.size == 0, (size, kind, batch[differs[:3]], got[differs[:3]])
