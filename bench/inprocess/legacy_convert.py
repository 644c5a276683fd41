"""Converting a legacy binary XGBoost model (``Booster.save_model`` from 0.90 to 2.0) at load:
the time and peak memory of ``xgboost.legacy.model_document`` for a 1,000-tree depth-8 model,
against the size of the converted model's JSON (issue 32: under 1 s, peak under 2x the JSON).

    .venv/bin/python bench/inprocess/legacy_convert.py [--trees 1000] [--depth 8]

The model is written here in the legacy layout (full binary trees of random splits over 50
features, as XGBoost 1.7 writes them), so no old XGBoost is needed. Peak memory is
tracemalloc's (numpy's buffers included) over the conversion alone; the time is the best of
three conversions.
"""

from __future__ import annotations

import argparse
import json
import struct
import time
import tracemalloc
from pathlib import Path

import numpy as np
import xgboost as xgb

from smserve.algorithms.xgboost.legacy import model_document
from smserve.algorithms.xgboost.legacy.binary import (
    GBTREE_PARAM,
    LEARNER_PARAM,
    NODE,
    STAT,
    TREE_PARAM,
)

N_FEATURES = 50


def _text(value: bytes) -> bytes:
    return struct.pack("<Q", len(value)) + value


def legacy_model(trees: int, depth: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    learner = np.zeros(1, LEARNER_PARAM)
    learner[0]["base_score"], learner[0]["num_feature"] = 0.5, N_FEATURES
    learner[0]["major_version"], learner[0]["minor_version"] = 1, 7
    gbtree = np.zeros(1, GBTREE_PARAM)
    gbtree[0]["num_trees"], gbtree[0]["num_parallel_tree"] = trees, 1
    parts = [b"binf", learner.tobytes(), _text(b"binary:logistic"), _text(b"gbtree")]
    parts.append(gbtree.tobytes())
    parts += [_tree(rng, depth) for _ in range(trees)]
    parts.append(np.zeros(trees, "<i4").tobytes())
    return b"".join(parts)


def _tree(rng: np.random.Generator, depth: int) -> bytes:
    n = 2 ** (depth + 1) - 1
    inner = 2**depth - 1
    param = np.zeros(1, TREE_PARAM)
    param[0]["num_nodes"], param[0]["num_feature"], param[0]["max_depth"] = n, N_FEATURES, depth
    index = np.arange(n)
    nodes = np.zeros(n, NODE)
    left = np.where(index < inner, 2 * index + 1, -1)
    nodes["left"], nodes["right"] = left, np.where(index < inner, 2 * index + 2, -1)
    parents = np.where(index % 2 == 1, (index - 1) // 2 | -(2**31), (index - 2) // 2)
    nodes["parent"] = np.where(index == 0, -1, parents)
    features = rng.integers(0, N_FEATURES, n).astype(np.uint32)
    nodes["sindex"] = np.where(index < inner, features | np.uint32(rng.integers(0, 2) << 31), 0)
    nodes["info"] = rng.normal(size=n).astype(np.float32)
    stats = np.zeros(n, STAT)
    stats["sum_hess"] = rng.random(n).astype(np.float32) + 1
    return param.tobytes() + nodes.tobytes() + stats.tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=1000)
    parser.add_argument("--depth", type=int, default=8)
    args = parser.parse_args()
    data = legacy_model(args.trees, args.depth)
    path = Path("xgboost-model")
    model_document(path, data, False)  # warm: imports, caches
    seconds = min(_timed(path, data) for _ in range(3))
    tracemalloc.start()
    document = model_document(path, data, False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    booster = xgb.Booster()
    booster.load_model(bytearray(document.data))
    json_bytes = len(booster.save_raw("json"))
    report = {
        "trees": args.trees,
        "depth": args.depth,
        "legacy_bytes": len(data),
        "ubjson_bytes": len(document.data),
        "json_bytes": json_bytes,
        "convert_s": round(seconds, 3),
        "peak_bytes": peak,
        "peak_over_json": round(peak / json_bytes, 2),
    }
    print(json.dumps(report, indent=1))


def _timed(path: Path, data: bytes) -> float:
    start = time.perf_counter()
    model_document(path, data, False)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
