"""TF Serving's metric names, as its Prometheus exporter writes them, at its own path.

* ``:tensorflow:serving:request_count{model_name,status}``: every request to ``/v1/...`` and
  to ``/invocations`` (status: the canonical code name, ``OK``, ``INVALID_ARGUMENT``, ...);
* ``:tensorflow:serving:request_latency{model_name,API,entrypoint}``: a histogram in
  microseconds of successful requests, buckets 10 * 1.8**k for k < 33 plus ``+Inf``. ``API``
  is predict, classify or regress (empty for status/metadata GETs) and ``invocations`` for
  ``/invocations``; ``entrypoint`` is ``REST``.

A TF Serving dashboard reads these unchanged; ``metrics.serving`` has the conventional names.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from smserve.metrics.exposition import Histogram, labels

PATH = "/monitoring/prometheus/metrics"
COUNT = ":tensorflow:serving:request_count"
LATENCY = ":tensorflow:serving:request_latency"


def _bucket_limits() -> tuple[float, ...]:
    limits, bound = [], 10.0
    for _ in range(33):
        limits.append(bound)
        bound *= 1.8
    return tuple(limits)


BUCKET_LIMITS = _bucket_limits()

CountKey = tuple[str, str]  # model_name, status
LatencyKey = tuple[str, str, str]  # model_name, API, entrypoint


def _latency_histogram() -> Histogram:
    # Like TF's histogram: a value lands in the first bucket whose limit exceeds it.
    return Histogram(BUCKET_LIMITS, right=True)


class TFCounts:
    """One process's counts in TF Serving's names, or a sum of several."""

    def __init__(self) -> None:
        self.requests: dict[CountKey, int] = defaultdict(int)
        self.latency: dict[LatencyKey, Histogram] = defaultdict(_latency_histogram)

    def record(self, model: str, status: str, api: str, latency_us: float | None) -> None:
        self.requests[(model, status)] += 1
        if latency_us is not None:
            self.latency[(model, api, "REST")].observe(latency_us)

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": [[*key, n] for key, n in self.requests.items()],
            "latency": [[*key, *h.to_json()] for key, h in self.latency.items()],
        }

    def add_json(self, data: dict[str, Any]) -> None:
        for model, status, n in data.get("requests", ()):
            self.requests[(model, status)] += n
        for model, api, entrypoint, buckets, total in data.get("latency", ()):
            self.latency[(model, api, entrypoint)].add(buckets, total)

    def render(self) -> str:
        lines = [f"# TYPE {COUNT} counter"]
        for (model, status), n in sorted(self.requests.items()):
            lines.append(f"{COUNT}{{{labels(model_name=model, status=status)}}} {n}")
        lines.append(f"# TYPE {LATENCY} histogram")
        for (model, api, entrypoint), histogram in sorted(self.latency.items()):
            label_text = labels(model_name=model, API=api, entrypoint=entrypoint)
            lines.extend(histogram.lines(LATENCY, label_text, _number))
        return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return format(value, "g")  # six significant digits, as TF Serving's exporter writes them
