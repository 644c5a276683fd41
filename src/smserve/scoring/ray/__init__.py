"""Ray Data integration (``pip install smserve[ray]``): ``ModelScorer`` scores Dataset batches
with the same algorithms and output keys as the endpoint, loading the model once per actor::

    ds.map_batches(ModelScorer, fn_constructor_kwargs={"model_dir": "/models/xgb"},
                   concurrency=4, batch_format="numpy")

``smserve score --engine ray`` (``smserve.scoring.ray.engine``) runs whole scoring jobs on a
cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smserve.algorithms.loading import load_algorithm
from smserve.config import Settings
from smserve.errors import InvalidInput
from smserve.types import Batch, FloatArray

__all__ = ["ModelScorer"]


class ModelScorer:
    """A callable class for ``Dataset.map_batches``: feature columns in, output columns out.

    ``columns`` picks the feature columns in model order (default: every column not in
    ``keep``); one 2-D (tensor) column is used as the whole feature matrix. ``keep`` columns
    (ids, say) are copied to the output. Settings come from ``environ`` (default: the actor's
    environment), so ``SAGEMAKER_INFERENCE_OUTPUT`` and the other endpoint variables apply.
    Batches may be dicts of numpy arrays, pandas DataFrames or pyarrow Tables; the answer is
    a dict of numpy arrays, a vector output (class probabilities) as a 2-D array.
    """

    def __init__(
        self,
        model_dir: str | Path,
        columns: Sequence[str] | None = None,
        keep: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        settings = Settings.from_env(environ).replace(model_dir=Path(model_dir))
        self.algorithm = load_algorithm(settings)
        self.columns, self.keep = columns, tuple(keep)

    def __call__(self, batch: Any) -> dict[str, np.ndarray]:
        data = _as_numpy(batch)
        prediction = self.algorithm.predict(Batch(self._features(data)))
        kept = {name: data[name] for name in self.keep}
        return {**kept, **dict(prediction.items())}

    def _features(self, data: Mapping[str, np.ndarray]) -> FloatArray:
        names = list(self.columns or [n for n in data if n not in self.keep])
        missing = [n for n in names if n not in data]
        if missing:
            raise InvalidInput(f"the batch has no column {missing[0]!r}; it has {list(data)}")
        arrays = [np.asarray(data[n], dtype=np.float32) for n in names]
        if len(arrays) == 1 and arrays[0].ndim == 2:
            return np.ascontiguousarray(arrays[0])
        return np.ascontiguousarray(np.column_stack(arrays))


def _as_numpy(batch: Any) -> Mapping[str, np.ndarray]:
    """Columns of a dict of arrays, a pandas DataFrame or a pyarrow Table (nulls as NaN)."""
    if isinstance(batch, Mapping):
        return {name: np.asarray(values) for name, values in batch.items()}
    if hasattr(batch, "column_names"):  # pyarrow.Table
        return {name: _arrow_column(batch.column(name)) for name in batch.column_names}
    return {str(name): batch[name].to_numpy() for name in batch.columns}  # pandas.DataFrame


def _arrow_column(column: Any) -> np.ndarray:
    values = column.to_numpy()
    if values.dtype == object and len(values) and isinstance(values[0], np.ndarray):
        return np.stack(values)  # a list column: one vector per row
    return np.asarray(values)
