"""Which batch sizes the fast predictor serves: measured at load, against XGBoost's own path
as the server runs it (the worker's threads, the single-threaded copy for small batches, the
C API predictor), never guessed.

Sizes grow by a factor of four from one row while the fast predictor is faster; at the first
size where it is not, one size between the last win and that loss is tried. The fast
predictor then serves every batch up to the largest size it won at, XGBoost every larger
one. Batches stop at MEASURE_CELLS values (a model of 1,000 features is measured up to
4,096 rows, and the fast predictor serves at most that many). Each time is the best of
several rounds that alternate the two predictors (the best, because other work on the
machine only ever adds time; alternating, so that a busy moment hits both). The whole
measurement stops at its deadline with what it has.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SIZES = (1, 4, 16, 64, 256, 1024, 4096, 16384)
MEASURE_CELLS = 1 << 22  # values in a measured batch at most: wide models stop sooner
ROUNDS = 5
ROUND_S = 0.004  # calls per round: enough to fill this (one call at least)

Call = Callable[[np.ndarray], object]


@dataclass(frozen=True, slots=True)
class Timing:
    rows: int
    fast_s: float
    xgboost_s: float

    @property
    def fast_wins(self) -> bool:
        return self.fast_s < self.xgboost_s

    def __str__(self) -> str:
        winner = "fast" if self.fast_wins else "XGBoost"
        return (
            f"{self.rows} row(s): {self.fast_s * 1e3:.3f} ms vs XGBoost "
            f"{self.xgboost_s * 1e3:.3f} ms ({winner})"
        )


@dataclass(frozen=True, slots=True)
class Choice:
    """The fast predictor serves batches of 1..``max_rows`` rows (0: none)."""

    max_rows: int
    timings: tuple[Timing, ...]

    def explained(self) -> str:
        return "; ".join(str(t) for t in sorted(self.timings, key=lambda t: t.rows))


def choose(fast: Call, xgboost: Call, rows: np.ndarray, deadline: float) -> Choice:
    """Measure ``fast`` against ``xgboost`` on batches drawn from ``rows`` until one loses
    or ``deadline`` (``time.monotonic()``) passes."""
    timings: list[Timing] = []
    largest = max(1, MEASURE_CELLS // max(int(rows.shape[1]), 1))
    for size in SIZES:
        if time.monotonic() > deadline or size > largest:
            break
        timing = measure(fast, xgboost, _batch(rows, size))
        timings.append(timing)
        if not timing.fast_wins:
            between = _between(timings)
            if between and time.monotonic() < deadline:
                timings.append(measure(fast, xgboost, _batch(rows, between)))
            break
    wins = [t.rows for t in timings if t.fast_wins and _no_loss_below(t.rows, timings)]
    return Choice(max(wins, default=0), tuple(timings))


def measure(fast: Call, xgboost: Call, batch: np.ndarray) -> Timing:
    calls = max(1, int(ROUND_S / max(_once(xgboost, batch), 1e-7)))
    fast_s = xgboost_s = float("inf")
    for _ in range(ROUNDS):
        fast_s = min(fast_s, _per_call(fast, batch, calls))
        xgboost_s = min(xgboost_s, _per_call(xgboost, batch, calls))
    return Timing(int(batch.shape[0]), fast_s, xgboost_s)


def _once(call: Call, batch: np.ndarray) -> float:
    call(batch)  # warm: first calls allocate
    return _per_call(call, batch, 1)


def _per_call(call: Call, batch: np.ndarray, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call(batch)
    return (time.perf_counter() - start) / calls


def _batch(rows: np.ndarray, size: int) -> np.ndarray:
    repeats = -(-size // rows.shape[0])
    return np.ascontiguousarray(np.tile(rows, (repeats, 1))[:size])


def _between(timings: list[Timing]) -> int | None:
    """The size halfway (geometrically) between the last win and the first loss."""
    if len(timings) < 2 or not timings[-2].fast_wins:
        return None
    middle = int(round((timings[-2].rows * timings[-1].rows) ** 0.5))
    return middle if timings[-2].rows < middle < timings[-1].rows else None


def _no_loss_below(size: int, timings: list[Timing]) -> bool:
    return all(t.fast_wins for t in timings if t.rows <= size)
