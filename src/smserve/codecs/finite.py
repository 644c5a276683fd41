"""The check every decoded batch passes before it reaches a model: no infinities.

An infinity (``inf``, ``Infinity``, or a number beyond float32's range such as ``1e39``) is
never a valid feature: XGBoost's own ``DMatrix`` refuses it, and so does the built-in
container. NaN is not checked here: it is a missing value, which XGBoost takes and k-means
refuses itself. One vectorised test covers the dense and CSR batches of every format, so a
decoder only has to say where a value came from (``Batch.locate``).
"""

from __future__ import annotations

import numpy as np

from smserve.errors import DecodeError
from smserve.scipy_sparse import sparse as sp
from smserve.types import Batch, Features


def check_finite(batch: Batch, media_type: str) -> None:
    """Raise DecodeError naming the first infinite value of ``batch`` in the body's terms."""
    features = batch.features
    values = features.data if sp.issparse(features) else features
    if not np.isinf(values).any():  # ~50 us for 10,000 x 50, ~2 us for one row
        return
    row, column = _first_infinite(features)
    raise DecodeError(
        f"{media_type}: {batch.locate(row, column)}: the value is infinite or beyond "
        "float32's range (about 3.4e38); features must be finite numbers"
    )


def _first_infinite(features: Features) -> tuple[int, int]:
    """(row, column), 0-based, of the first infinite value in row-major order."""
    if isinstance(features, np.ndarray):
        row, column = divmod(int(np.argmax(np.isinf(features))), features.shape[1])
        return row, column
    at = int(np.argmax(np.isinf(features.data)))
    row = int(np.searchsorted(features.indptr, at, side="right")) - 1
    return row, int(features.indices[at])
