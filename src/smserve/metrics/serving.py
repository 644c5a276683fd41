"""The server's own metrics, in Prometheus's conventions (``smserve_`` prefix, ``_total``
counters, seconds, bytes), as one worker counts them and as their sum over workers.

Label values are bounded, so that no client can grow the page without limit: ``door`` is one
of the doors, ``format`` the request's Content-Type when it is a format the server reads
(else ``other``; empty without one), ``status`` the HTTP status, and ``model`` the model that
answered (empty when the request named none that exists: a 404)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from smserve.metrics.exposition import Histogram

# Seconds: from a 1-row request through nginx (~0.3 ms) to an hour-long asynchronous one.
DURATION_LIMITS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
)  # fmt: skip
# Seconds to load a model: from a small booster to a large archive.
LOAD_LIMITS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
STAGES = ("decode", "predict", "encode")
MAX_SERIES = 10_000  # request series per worker; more (hostile model names) count as "other"
OTHER = "other"

RequestKey = tuple[str, str, str, int]  # door, model, format, status


def _duration() -> Histogram:
    return Histogram(DURATION_LIMITS)


class ServingCounts:
    """One process's counts, or a sum of several (``add_json``)."""

    def __init__(self) -> None:
        # [requests, bytes in, bytes out] per (door, model, format, status)
        self.requests: dict[RequestKey, list[int]] = {}
        self.duration: dict[tuple[str, str], Histogram] = defaultdict(_duration)
        self.stages: dict[tuple[str, str], Histogram] = defaultdict(_duration)
        self.in_flight = 0
        self.models_loaded = 0  # in this worker; the sum of several keeps the largest
        self.loads = {"success": 0, "failure": 0}
        self.load_duration = Histogram(LOAD_LIMITS)
        self.refused = 0  # multi-model loads answered 507
        self.unloads = 0
        self.worker_restarts = 0

    def count(self, key: RequestKey, size_in: int, size_out: int) -> None:
        entry = self.requests.get(key)
        if entry is None:
            if len(self.requests) >= MAX_SERIES:
                key = (key[0], OTHER, key[2], key[3])
            entry = self.requests.setdefault(key, [0, 0, 0])
        entry[0] += 1
        entry[1] += size_in
        entry[2] += size_out

    def time_stages(self, model: str, stages: tuple[float, float, float]) -> None:
        decode, predict, encode = stages
        self.stages[(model, "decode")].observe(decode)
        self.stages[(model, "predict")].observe(predict)
        self.stages[(model, "encode")].observe(encode)

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": [[*key, *values] for key, values in self.requests.items()],
            "duration": [[*key, *h.to_json()] for key, h in self.duration.items()],
            "stages": [[*key, *h.to_json()] for key, h in self.stages.items()],
            "in_flight": self.in_flight,
            "models_loaded": self.models_loaded,
            "loads": self.loads,
            "load_duration": self.load_duration.to_json(),
            "refused": self.refused,
            "unloads": self.unloads,
            "worker_restarts": self.worker_restarts,
        }

    def add_json(self, data: dict[str, Any]) -> None:
        """Add one process's ``to_json`` (any of its keys may be missing)."""
        for door, model, fmt, status, n, size_in, size_out in data.get("requests", ()):
            entry = self.requests.setdefault((door, model, fmt, status), [0, 0, 0])
            entry[0], entry[1], entry[2] = entry[0] + n, entry[1] + size_in, entry[2] + size_out
        for door, model, buckets, total in data.get("duration", ()):
            self.duration[(door, model)].add(buckets, total)
        for model, stage, buckets, total in data.get("stages", ()):
            self.stages[(model, stage)].add(buckets, total)
        self.load_duration.add(*data.get("load_duration", ([0] * (len(LOAD_LIMITS) + 1), 0.0)))
        for result, n in data.get("loads", {}).items():
            self.loads[result] = self.loads.get(result, 0) + n
        self.models_loaded = max(self.models_loaded, data.get("models_loaded", 0))
        for name in ("in_flight", "refused", "unloads", "worker_restarts"):
            setattr(self, name, getattr(self, name) + data.get(name, 0))
