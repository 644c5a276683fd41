"""Regenerate local_test's training data and sample payloads (deterministic; output committed).

    .venv/bin/python local_test/make_test_data.py

Training data: 3 well-separated blobs in 4 dimensions, 40 rows each, label in column 0 (the
SageMaker convention for CSV training): 1 for the blob centred at (5, 5, 0, 0), else 0. XGBoost
learns the label; k-means (k=3) finds the blobs and ignores the label column (label_size=1).

Payloads: the same 6 rows (2 per blob, several exact zeros) in every request format, so a test
can check that all formats give the same answers. The RecordIO files are written with the
SageMaker Python SDK's own encoder, the way a real client would produce them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import scipy.sparse

HERE = Path(__file__).resolve().parent
TRAIN_DIR = HERE / "test_dir" / "input" / "data" / "train"
PAYLOADS = HERE / "payloads"

CENTERS = np.array([[0, 0, 0, 0], [5, 5, 0, 0], [0, 5, 5, 5]], dtype=np.float64)
POSITIVE_BLOB = 1
ROWS_PER_BLOB = 40

# Two rows per blob, in blob order; the zeros make the sparse encodings meaningful.
PAYLOAD_ROWS = np.array(
    [
        [0.1, 0.0, -0.2, 0.0],
        [0.0, 0.3, 0.0, 0.1],
        [5.1, 4.8, 0.0, 0.2],
        [4.9, 5.2, 0.1, 0.0],
        [0.0, 5.1, 4.9, 5.2],
        [0.2, 4.8, 5.0, 4.9],
    ]
)


def training_rows(seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    blobs = np.repeat(np.arange(len(CENTERS)), ROWS_PER_BLOB)
    features = CENTERS[blobs] + rng.normal(scale=0.6, size=(len(blobs), CENTERS.shape[1]))
    labels = (blobs == POSITIVE_BLOB).astype(np.float64)
    rows = np.column_stack([labels, features])
    return rows[rng.permutation(len(rows))]


def csv_text(rows: np.ndarray) -> str:
    return "".join(",".join(_num(v) for v in row) + "\n" for row in rows)


def _num(value: float) -> str:
    return f"{value:.4g}" if value != int(value) else str(int(value))


def sparse_entries(row: np.ndarray) -> tuple[list[int], list[float]]:
    keys = [int(i) for i in np.flatnonzero(row)]
    return keys, [float(row[i]) for i in keys]


def json_payloads(rows: np.ndarray) -> dict[str, str]:
    dense = {"instances": [{"features": [float(v) for v in row]} for row in rows]}
    sparse = {"instances": [_sparse_instance(row) for row in rows]}
    lines = "".join(json.dumps({"features": [float(v) for v in row]}) + "\n" for row in rows)
    return {
        "dense.json": json.dumps(dense) + "\n",
        "sparse.json": json.dumps(sparse) + "\n",
        "dense.jsonl": lines,
    }


def _sparse_instance(row: np.ndarray) -> dict[str, object]:
    keys, values = sparse_entries(row)
    return {"data": {"features": {"keys": keys, "shape": [len(row)], "values": values}}}


def libsvm_text(rows: np.ndarray) -> str:
    """0-based indices with a leading (ignored) label, as dump_svmlight_file writes them."""
    lines = []
    for row in rows:
        keys, values = sparse_entries(row)
        lines.append(
            " ".join(["0"] + [f"{k}:{_num(v)}" for k, v in zip(keys, values, strict=True)])
        )
    return "\n".join(lines) + "\n"


def recordio_payloads(rows: np.ndarray) -> dict[str, bytes]:
    from sagemaker.amazon.common import write_numpy_to_dense_tensor, write_spmatrix_to_sparse_tensor

    dense, sparse = io.BytesIO(), io.BytesIO()
    write_numpy_to_dense_tensor(dense, rows.astype(np.float32))
    write_spmatrix_to_sparse_tensor(sparse, scipy.sparse.csr_matrix(rows.astype(np.float32)))
    return {"dense.pbr": dense.getvalue(), "sparse.pbr": sparse.getvalue()}


def main() -> None:
    TRAIN_DIR.mkdir(parents=True, exist_ok=True)
    PAYLOADS.mkdir(parents=True, exist_ok=True)
    (TRAIN_DIR / "train.csv").write_text(csv_text(training_rows()))
    texts = {"dense.csv": csv_text(PAYLOAD_ROWS), "sparse.libsvm": libsvm_text(PAYLOAD_ROWS)}
    texts.update(json_payloads(PAYLOAD_ROWS))
    for name, text in texts.items():
        (PAYLOADS / name).write_text(text)
    for name, data in recordio_payloads(PAYLOAD_ROWS).items():
        (PAYLOADS / name).write_bytes(data)
    print(f"wrote {TRAIN_DIR / 'train.csv'} and {len(texts) + 2} payloads in {PAYLOADS}")


if __name__ == "__main__":
    main()
