"""GPU XGBoost check: the same model served with SMSERVE_XGBOOST_DEVICE=cpu and =cuda must
give equal predictions (within float32 tolerance), and the script times a large batch on each.

    .venv/bin/python bench/gpu_check.py [--rows 200000] [--trees 300]

Exits 0 after printing SKIPPED when XGBoost sees no GPU (the CPU path is tested in CI);
exits 1 when the predictions disagree.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402
from smserve.types import Batch  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp)
        harness.build_xgboost(model_dir, n_trees=args.trees, depth=8)
        loaded = harness.cpu_and_gpu(model_dir)
        if loaded is None:
            return 0
        cpu, gpu = loaded
        batch = Batch(np.ascontiguousarray(harness.rows(args.rows)))
        cpu_score = cpu.predict(batch).outputs["score"]
        gpu_score = gpu.predict(batch).outputs["score"]
        max_diff = float(np.max(np.abs(cpu_score - gpu_score)))
        equal = bool(np.allclose(cpu_score, gpu_score, rtol=1e-5, atol=1e-6))
        cpu_ms = statistics.median(
            harness.timings_ms(lambda: cpu.predict(batch), args.repeat, warmup=1)
        )
        gpu_ms = statistics.median(
            harness.timings_ms(lambda: gpu.predict(batch), args.repeat, warmup=1)
        )
    print(f"rows {args.rows} x {harness.N_FEATURES}, {args.trees} trees depth 8")
    print(f"max |cpu - gpu| = {max_diff:.3g}  ->  {'EQUAL' if equal else 'DIFFERENT'} (rtol 1e-5)")
    print(f"cpu {cpu_ms:9.1f} ms   gpu {gpu_ms:9.1f} ms   speed-up {cpu_ms / gpu_ms:6.1f}x")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
