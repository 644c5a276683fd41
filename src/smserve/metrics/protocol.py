"""A protocol's own metric names, as a door declares them (``DoorSpec.metric_names``): every
request a door counts under an API name (``DoorReply.verb``) is also counted in the names of
every door that declares some, so a dashboard made for that protocol reads them unchanged.

Two families, in the shape TF Serving's exporter writes them (the first door to declare
names; its declaration is ``tfserving/metrics.py``):

* ``count{model_name,status}``: a counter of requests, ``status`` the protocol's name for the
  HTTP status (``ProtocolNames.status``);
* ``latency{model_name,API,entrypoint}``: a histogram of successful requests' latency in
  ``scale`` units per second (microseconds: 1e6), over the protocol's ``buckets``, ``API``
  being the request's verb.

The page of a protocol's names is served by its door, at a path of its own (``render``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smserve.metrics.exposition import Histogram, labels


@dataclass(frozen=True, slots=True)
class ProtocolNames:
    """A protocol's metric names (see the module): ``count`` and ``latency`` families,
    ``buckets`` (a value lands in the first bucket whose limit exceeds it, as in TF),
    ``status`` naming an HTTP status, ``scale`` latency units per second, the ``entrypoint``
    label's value, and ``number`` writing a latency sample."""

    count: str
    latency: str
    buckets: tuple[float, ...]
    status: Callable[[int], str]
    scale: float = 1e6
    entrypoint: str = "REST"
    # six significant digits, as TF Serving's exporter writes them
    number: Callable[[float], str] = lambda value: format(value, "g")


CountKey = tuple[str, str]  # model_name, status
LatencyKey = tuple[str, str, str]  # model_name, API, entrypoint


class ProtocolCounts:
    """One process's counts in one protocol's names, or a sum of several."""

    def __init__(self, names: ProtocolNames) -> None:
        self.names = names
        self.requests: dict[CountKey, int] = defaultdict(int)
        self.latency: dict[LatencyKey, Histogram] = defaultdict(self._histogram)

    def _histogram(self) -> Histogram:
        return Histogram(self.names.buckets, right=True)

    def record(self, model: str, status: str, api: str, seconds: float | None) -> None:
        """One request; ``seconds`` only for a success (only successes are timed)."""
        self.requests[(model, status)] += 1
        if seconds is not None:
            self.latency[(model, api, self.names.entrypoint)].observe(seconds * self.names.scale)

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
        count, latency = self.names.count, self.names.latency
        lines = [f"# TYPE {count} counter"]
        for (model, status), n in sorted(self.requests.items()):
            lines.append(f"{count}{{{labels(model_name=model, status=status)}}} {n}")
        lines.append(f"# TYPE {latency} histogram")
        for (model, api, entrypoint), histogram in sorted(self.latency.items()):
            label_text = labels(model_name=model, API=api, entrypoint=entrypoint)
            lines.extend(histogram.lines(latency, label_text, self.names.number))
        return "\n".join(lines) + "\n"
