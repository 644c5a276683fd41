"""Prometheus's text exposition format 0.0.4: metric families, labels, numbers, histograms.

Written by hand rather than with prometheus_client: the pages are merged from files that every
gunicorn worker writes (``metrics.store``), which its multiprocess mode would want to own
through an environment variable and a directory of its own, and the format is a few lines."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"


def family(name: str, kind: str, help_text: str) -> list[str]:
    """The ``# HELP`` and ``# TYPE`` lines that open a metric family."""
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]


def labels(**values: str) -> str:
    """``name="value",...`` with values escaped (what goes between braces)."""
    return ",".join(f'{name}="{escape(value)}"' for name, value in values.items())


def sample(name: str, label_text: str, value: float) -> str:
    """One sample line: ``name{labels} value``."""
    if label_text:
        return f"{name}{{{label_text}}} {number(value)}"
    return f"{name} {number(value)}"


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value: float) -> str:
    """An integer as digits, anything else as Python's shortest exact float text."""
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


class Histogram:
    """Counts per bucket of ``limits`` (plus one for +Inf) and the sum of observed values.

    ``right``: a value equal to a limit falls in the next bucket (TF Serving's rule); else in
    that limit's bucket (Prometheus's ``le``)."""

    __slots__ = ("limits", "buckets", "total", "_find")

    def __init__(self, limits: Sequence[float], right: bool = False) -> None:
        self.limits = limits
        self.buckets = [0] * (len(limits) + 1)
        self.total = 0.0
        self._find: Callable[[Sequence[float], float], int] = (
            bisect.bisect_right if right else bisect.bisect_left
        )

    def observe(self, value: float) -> None:
        self.buckets[self._find(self.limits, value)] += 1
        self.total += value

    def add(self, buckets: Sequence[int], total: float) -> None:
        """Merge another histogram's counts (the same limits)."""
        if len(buckets) != len(self.buckets):
            raise ValueError("histograms with different buckets cannot be merged")
        self.buckets = [a + b for a, b in zip(self.buckets, buckets, strict=True)]
        self.total += total

    def to_json(self) -> list[Any]:
        return [self.buckets, self.total]

    def lines(self, name: str, label_text: str, text: Callable[[float], str] = number) -> list[str]:
        """``_bucket`` (cumulative), ``_sum`` and ``_count`` lines; ``label_text`` is the
        series' labels without braces (may be empty); ``text`` writes limits and the sum."""
        lines, cumulative = [], 0
        limits = [text(limit) for limit in self.limits] + ["+Inf"]
        prefix = f"{label_text}," if label_text else ""
        for limit, count in zip(limits, self.buckets, strict=True):
            cumulative += count
            lines.append(f'{name}_bucket{{{prefix}le="{limit}"}} {cumulative}')
        braces = f"{{{label_text}}}" if label_text else ""
        lines.append(f"{name}_sum{braces} {text(self.total)}")
        lines.append(f"{name}_count{braces} {cumulative}")
        return lines
