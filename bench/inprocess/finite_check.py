"""Benchmark: what the non-finite input check (``codecs/finite.py``) costs per request.

Times ``check_finite`` alone on decoded batches (dense CSV, CSR libsvm) of 1 and 10,000 rows
x 50 features, beside the whole in-process CSV -> CSV request (decode, check, XGBoost predict,
encode) it is part of. Prints timings; asserts nothing.

    .venv/bin/python bench/inprocess/finite_check.py [--repeat-small 5000] [--repeat-large 50]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import scipy.sparse as sp

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402
from smserve import media  # noqa: E402
from smserve.algorithms.loading import load_algorithm  # noqa: E402
from smserve.codecs import default_registry  # noqa: E402
from smserve.codecs.finite import check_finite  # noqa: E402
from smserve.config import Settings  # noqa: E402
from smserve.service import InferenceService  # noqa: E402
from smserve.types import Batch  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat-small", type=int, default=5000)
    parser.add_argument("--repeat-large", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        harness.build_xgboost(Path(tmp))
        settings = Settings(model_dir=Path(tmp), xgboost_device="cpu")
        service = InferenceService(load_algorithm(settings), default_registry(settings), settings)
        for n, repeat in ((1, args.repeat_small), (10_000, args.repeat_large)):
            matrix = harness.rows(n)
            body = harness.csv_body(matrix)
            dense, sparse = Batch(matrix), Batch(sp.csr_matrix(matrix))
            check = harness.timings_ms(lambda b=dense: check_finite(b, media.CSV), repeat)
            check_csr = harness.timings_ms(lambda b=sparse: check_finite(b, media.CSV), repeat)
            whole = harness.timings_ms(
                lambda b=body: service.invoke(b, media.CSV, media.CSV), repeat
            )
            print(f"{n:>6} rows x 50  check dense   {harness.summary(check)}")
            print(f"{n:>6} rows x 50  check CSR     {harness.summary(check_csr)}")
            print(f"{n:>6} rows x 50  CSV request   {harness.summary(whole)}")


if __name__ == "__main__":
    main()
