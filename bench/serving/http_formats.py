"""RecordIO-protobuf (dense and sparse) and libsvm over real HTTP, at 1 and 10,000 rows.

The floor here is the same decode -> predict -> encode done in-process by calling the
service directly (there is no plain-numpy parser for these formats to compare with), so the
ratio is what the server itself costs. The bodies are written by the SageMaker SDK's own
RecordIO writers. Also prints the SDK's per-record reader time for scale.

    .venv/bin/python bench/serving/http_formats.py [--repeat-small 1000] [--repeat-large 10]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402
from smserve.config import Settings  # noqa: E402
from smserve.scoring.scorer import build_service  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from sagemaker.amazon.common import (  # type: ignore[import-untyped]
        read_records,
        write_numpy_to_dense_tensor,
        write_spmatrix_to_sparse_tensor,
    )


def recordio_dense(matrix: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    write_numpy_to_dense_tensor(buffer, matrix)
    return buffer.getvalue()


def recordio_sparse(matrix: sp.csr_matrix) -> bytes:
    buffer = io.BytesIO()
    write_spmatrix_to_sparse_tensor(buffer, matrix)
    return buffer.getvalue()


def libsvm(matrix: sp.csr_matrix) -> bytes:
    lines = []
    for row in range(matrix.shape[0]):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        pairs = zip(matrix.indices[start:end], matrix.data[start:end], strict=True)
        lines.append("0 " + " ".join(f"{i}:{v:.6g}" for i, v in pairs))
    return ("\n".join(lines) + "\n").encode()


def sparse_rows(n: int) -> sp.csr_matrix:
    return sp.random(n, harness.N_FEATURES, density=0.2, format="csr", dtype=np.float32, rng=3)


def bodies(n: int) -> dict[str, tuple[bytes, str]]:
    recordio = "application/x-recordio-protobuf"
    return {
        "recordio dense": (recordio_dense(harness.rows(n)), recordio),
        "recordio sparse": (recordio_sparse(sparse_rows(n)), recordio),
        "libsvm": (libsvm(sparse_rows(n)), "text/libsvm"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat-small", type=int, default=1000)
    parser.add_argument("--repeat-large", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp)
        harness.build_xgboost(model_dir)
        service = build_service(Settings(model_dir=model_dir, workers=1))
        small, large = bodies(1), bodies(10_000)
        with harness.server(model_dir, workers=1) as port:
            client = harness.Client(port)
            for name in small:
                for label, cases, repeat in (
                    ("1 row", small, args.repeat_small),
                    ("10k rows", large, args.repeat_large),
                ):
                    body, content_type = cases[name]
                    floor = harness.timings_ms(
                        lambda b=body, c=content_type: service.invoke(b, c, "text/csv"), repeat
                    )
                    http = harness.timings_ms(
                        lambda b=body, c=content_type: client.post(b, c, "text/csv"), repeat
                    )
                    ratio = statistics.fmean(http) / statistics.fmean(floor)
                    print(f"{name:16} {label:8} {len(body) / 1e6:6.2f} MB")
                    print(f"    in-process {harness.summary(floor)}")
                    print(f"    HTTP       {harness.summary(http)}   ratio {ratio:.2f}x")
        sdk_body = large["recordio dense"][0]
        start = time.perf_counter()
        read_records(io.BytesIO(sdk_body))
        sdk_ms = (time.perf_counter() - start) * 1000
        print(f"for scale: the SDK's read_records on the 10k dense body takes {sdk_ms:.0f} ms")


if __name__ == "__main__":
    main()
