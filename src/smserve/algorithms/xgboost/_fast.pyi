"""Types of the C extension ``_fast.c`` (see there and ``xgboost.fast``)."""

from typing import Any as Buffer  # collections.abc.Buffer is Python 3.12+

NODE_BYTES: int

class Forest:
    depth: int
    def __init__(
        self,
        nodes: Buffer,
        starts: Buffer,
        groups: Buffer,
        base: Buffer,
        n_features: int,
        transform: int,
    ) -> None: ...
    def predict(self, features: Buffer, out: Buffer, margin: bool) -> None: ...
    def predict_csr(
        self,
        indptr: Buffer,
        indices: Buffer,
        data: Buffer,
        n_rows: int,
        out: Buffer,
        margin: bool,
    ) -> None: ...
