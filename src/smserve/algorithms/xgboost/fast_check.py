"""The probe rows a fast predictor must answer exactly as XGBoost does before it serves.

Rows are placed on the model's own split thresholds: for every feature, each distinct
threshold exactly, one float32 step below and above it, and a little further either side, so
that every split is taken both ways and at its edge; then missing values (NaN) in one cell
in ten, a row all missing, a row of zeros and rows of infinities. Every batch is compared
dense and (its first CSR_ROWS rows) as CSR (absent entries are missing values), CSR also
narrower than the model (the absent trailing columns, as ``XGBoost._aligned`` widens them);
each as values and as margins, which every output key of ``xgboost.output`` derives from,
so equal values and margins mean equal answers for every key. Agreement is bit for bit: the
same float32 bit patterns and shapes, a sign of zero included; the tolerance is zero.

The probe costs memory bounded by PROBE_CELLS values, whatever the model's width: fewer rows
for a wide model, and no fast predictor for a model so wide that MIN_ROWS rows do not fit
(``fast_trees`` refuses it before anything is allocated: XGBoost answers).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import numpy as np

from smserve.scipy_sparse import sparse as sp
from smserve.types import Features

logger = logging.getLogger(__name__)

MAX_PROBE_ROWS = 4096  # beyond it, a sample of each feature's thresholds
PROBE_CELLS = 1 << 22  # values in the probe rows at most (16 MiB of float32)
MIN_ROWS = 16
MAX_WIDTH = PROBE_CELLS // (2 * MIN_ROWS)  # features; wider models get no fast predictor
CSR_ROWS = 1024
_OFFSETS = (0.0, -1.0, 1.0, -1e-3, 1e-3)  # 0: at it; +-1: one float32 step; +-1e-3: relative
SPECIAL = (np.nan, 0.0, np.inf, -np.inf)  # the first rows: all missing, zeros, infinities

Predict = Callable[[Features, bool], np.ndarray]  # (features, margin) -> predictions


def probe_rows(thresholds: list[np.ndarray], seed: int = 20261201) -> np.ndarray:
    """float32 rows of len(thresholds) columns: first SPECIAL_ROWS rows all NaN, zero, +inf
    and -inf; then rows around the thresholds; then some of those with missing values."""
    rng = np.random.default_rng(seed)
    longest = max((len(values) for values in thresholds), default=0)
    fit = max(MIN_ROWS, PROBE_CELLS // (2 * max(len(thresholds), 1)))
    n_rows = min(max(longest * len(_OFFSETS), 64), MAX_PROBE_ROWS, fit)
    around = np.empty((n_rows, len(thresholds)), dtype=np.float32)
    for column, values in enumerate(thresholds):
        around[:, column] = _around(values, n_rows, rng)
    missing = around[: min(n_rows, MAX_PROBE_ROWS // 4)].copy()
    missing[rng.random(missing.shape) < 0.1] = np.nan
    special = np.repeat(np.asarray(SPECIAL, dtype=np.float32)[:, None], len(thresholds), axis=1)
    return np.concatenate((special, around, missing))


def _around(values: np.ndarray, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """Each threshold with each offset once (a random sample when there are too many), in
    a random order so that columns vary independently."""
    if not len(values):
        return np.asarray(rng.normal(size=n_rows), dtype=np.float32)
    cells = np.arange(n_rows)
    covered = len(values) * len(_OFFSETS) <= n_rows
    picks = cells % len(values) if covered else rng.integers(0, len(values), n_rows)
    offsets = np.asarray(_OFFSETS)[(cells // len(values)) % len(_OFFSETS)]
    return _offset(values[picks].astype(np.float32), offsets)[rng.permutation(n_rows)]


def _offset(chosen: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    below = np.nextafter(chosen, np.float32(-np.inf))
    above = np.nextafter(chosen, np.float32(np.inf))
    scaled = (chosen + offsets * (1 + np.abs(chosen))).astype(np.float32)
    cases = [offsets == 0, offsets == -1, offsets == 1]
    return np.asarray(np.select(cases, [chosen, below, above], scaled), dtype=np.float32)


def probe_batches(rows: np.ndarray) -> Iterator[Features]:
    """The probe rows: a few one at a time, all of them dense, and up to CSR_ROWS of them as
    CSR three ways (zeros absent, NaN stored, narrower than the model). CSR rows walk the
    same trees once scattered into a row of NaN, so fewer of them cover that step."""
    for single in rows[:8]:
        yield single[None, :].copy()
    yield rows
    head = rows[:CSR_ROWS]
    yield sp.csr_matrix(np.nan_to_num(head, nan=0.0))  # zeros absent: missing there
    yield sp.csr_matrix(head)  # NaN stored explicitly
    narrow = sp.csr_matrix(head[:, : max(1, head.shape[1] // 2)])
    yield sp.csr_matrix((narrow.data, narrow.indices, narrow.indptr), shape=head.shape)


def first_disagreement(fast: Predict, reference: Predict, rows: np.ndarray) -> str | None:
    """None when ``fast`` gives the bits of ``reference`` on every probe batch, values and
    margins; else what differed first."""
    for batch in probe_batches(rows):
        for margin in (False, True):
            got, expected = fast(batch, margin), reference(batch, margin)
            if not same_bits(got, expected):
                kind = "margins" if margin else "values"
                return f"{kind} of {_described(batch)}: {_difference(got, expected)}"
    return None


def same_bits(got: np.ndarray, expected: np.ndarray) -> bool:
    """Equal shapes, dtype float32 and bit patterns (so -0.0 differs from 0.0)."""
    if got.shape != expected.shape or got.dtype != np.float32 or expected.dtype != np.float32:
        return False
    return bool(np.array_equal(got.view(np.uint32), expected.view(np.uint32)))


def _described(batch: Features) -> str:
    kind = "CSR" if sp.issparse(batch) else "dense"
    return f"{batch.shape[0]} {kind} probe row(s)"


def _difference(got: np.ndarray, expected: np.ndarray) -> str:
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"shape {got.shape} {got.dtype} against XGBoost's {expected.shape} {expected.dtype}"
    delta = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    return f"largest difference {np.nanmax(delta, initial=0.0):.3g}"
