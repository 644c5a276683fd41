"""Timing loops that need nothing but the standard library: ``fast_candidates.py`` runs in an
environment of its own (treelite, TL2cgen, ONNX Runtime), without this project's."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_s(call: Callable[[], object], budget_s: float) -> float:
    call()
    once = _timed(call)
    repeat = int(min(max(budget_s / max(once, 1e-7), 5), 2000))
    return statistics.median(_timed(call) for _ in range(repeat))


def median_of(call: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` timed calls, in seconds."""
    return statistics.median(_timed(call) for _ in range(repeat))


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start
