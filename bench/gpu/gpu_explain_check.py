"""GPU explanations check: with SMSERVE_XGBOOST_DEVICE=cuda XGBoost computes contributions on
the GPU (GPUTreeShap); they must equal the CPU's within 1e-4, and the script times both.

    .venv/bin/python bench/gpu_explain_check.py [--rows 100000] [--trees 100]

Exits 0 after printing SKIPPED when XGBoost sees no GPU; exits 1 when the values disagree.
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
from smserve.algorithms.base import SelectableOutputs  # noqa: E402
from smserve.types import Batch  # noqa: E402

KEYS = ("contributions", "approximate_contributions")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp)
        harness.build_xgboost(model_dir, n_trees=args.trees, depth=6)
        loaded = harness.cpu_and_gpu(model_dir)
        if loaded is None:
            return 0
        cpu, gpu = loaded
        assert isinstance(cpu, SelectableOutputs)
        assert isinstance(gpu, SelectableOutputs)
        batch = Batch(np.ascontiguousarray(harness.rows(args.rows)))
        agree = True
        for key in KEYS:
            on_cpu = cpu.predict(batch, (key,)).outputs[key]
            on_gpu = gpu.predict(batch, (key,)).outputs[key]
            diff = float(np.max(np.abs(on_cpu - on_gpu)))
            agree = agree and diff <= 1e-4
            cpu_ms = statistics.median(
                harness.timings_ms(lambda k=key: cpu.predict(batch, (k,)), args.repeat, warmup=1)
            )
            gpu_ms = statistics.median(
                harness.timings_ms(lambda k=key: gpu.predict(batch, (k,)), args.repeat, warmup=1)
            )
            print(f"{key}: max |cpu - gpu| = {diff:.3g}; cpu {cpu_ms:.1f} ms, gpu {gpu_ms:.1f} ms")
    print(f"rows {args.rows} x {harness.N_FEATURES}, {args.trees} trees depth 6")
    print("EQUAL within 1e-4" if agree else "DIFFERENT")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
