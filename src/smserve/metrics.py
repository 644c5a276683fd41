"""Request metrics in TF Serving's Prometheus names, summed over every gunicorn worker.

Exposed at ``/monitoring/prometheus/metrics`` as Prometheus text:

* ``:tensorflow:serving:request_count{model_name,status}``: every request to ``/v1/...`` and
  to ``/invocations`` (status: the canonical code name, ``OK``, ``INVALID_ARGUMENT``, ...);
* ``:tensorflow:serving:request_latency{model_name,API,entrypoint}``: a histogram in
  microseconds of successful requests, buckets 10 * 1.8**k for k < 33 plus ``+Inf``. ``API``
  is predict, classify or regress (empty for status/metadata GETs) and ``invocations`` for
  ``/invocations``; ``entrypoint`` is ``REST``.

Aggregation across workers. Each worker counts in memory and writes its counts, whole, to its
own file (``<run dir>/metrics/<pid>-<id>.json``, replaced atomically) at most once a second
from a background thread, and right before answering a scrape. A scrape reads every file and
sums them. Files of workers that exited stay, so counters never go down when gunicorn
replaces a worker; a new server run starts from an empty run directory. Another worker's
counts are at most about a second old. No dependency was added: prometheus_client's
multiprocess mode would need its own environment variable and directory wiring, and the text
format for two metrics is a few dozen lines.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PATH = "/monitoring/prometheus/metrics"
CONTENT_TYPE = "text/plain"
COUNT = ":tensorflow:serving:request_count"
LATENCY = ":tensorflow:serving:request_latency"
FLUSH_INTERVAL_S = 1.0


def _bucket_limits() -> tuple[float, ...]:
    limits, bound = [], 10.0
    for _ in range(33):
        limits.append(bound)
        bound *= 1.8
    return tuple(limits)


BUCKET_LIMITS = _bucket_limits()

CountKey = tuple[str, str]  # model_name, status
LatencyKey = tuple[str, str, str]  # model_name, API, entrypoint


class _Histogram:
    def __init__(self, buckets: list[int] | None = None, total: float = 0.0) -> None:
        self.buckets = buckets or [0] * (len(BUCKET_LIMITS) + 1)
        self.total = total

    def observe(self, value: float) -> None:
        # Like TF's histogram: a value lands in the first bucket whose limit exceeds it.
        self.buckets[bisect.bisect_right(BUCKET_LIMITS, value)] += 1
        self.total += value

    def merge(self, other: _Histogram) -> None:
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]
        self.total += other.total


class Counts:
    """One process's counts, or a sum of several."""

    def __init__(self) -> None:
        self.requests: dict[CountKey, int] = defaultdict(int)
        self.latency: dict[LatencyKey, _Histogram] = defaultdict(_Histogram)

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": [[*key, n] for key, n in self.requests.items()],
            "latency": [[*key, h.buckets, h.total] for key, h in self.latency.items()],
        }

    def add_json(self, data: dict[str, Any]) -> None:
        for model, status, n in data["requests"]:
            self.requests[(model, status)] += n
        for model, api, entrypoint, buckets, total in data["latency"]:
            self.latency[(model, api, entrypoint)].merge(_Histogram(buckets, total))


class Metrics:
    """This process's metrics; ``directory`` (None: this process only) holds every worker's
    file. Thread-safe."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._counts = Counts()
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._dirty = threading.Event()
        self._file: Path | None = None
        self._file_pid: int | None = None
        self._flusher_pid: int | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def record(self, model: str, status: str, api: str, latency_us: float | None) -> None:
        """Count one request; ``latency_us`` only for successful ones (None otherwise)."""
        with self._lock:
            self._counts.requests[(model, status)] += 1
            if latency_us is not None:
                self._counts.latency[(model, api, "REST")].observe(latency_us)
        if not self._dirty.is_set():  # set() takes a lock and wakes waiters; once is enough
            self._dirty.set()
        self._ensure_flusher()

    def render(self) -> str:
        """Prometheus text for the sum over every worker's file (and this process)."""
        self.flush()
        total = Counts()
        for data in self._all_counts():
            total.add_json(data)
        return _render(total)

    def flush(self) -> None:
        """Write this process's counts to its file (no-op without a directory)."""
        if self.directory is None:
            return
        # One flush at a time, so an older snapshot never replaces a newer one.
        with self._flushing:
            self._dirty.clear()
            with self._lock:
                text = json.dumps(self._counts.to_json())
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            with os.fdopen(handle, "w") as stream:
                stream.write(text)
            os.replace(temporary, self._own_file())

    def _own_file(self) -> Path:
        # A forked worker inherits its parent's counts object but writes its own file.
        assert self.directory is not None
        if self._file is None or self._file_pid != os.getpid():
            self._file = self.directory / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
            self._file_pid = os.getpid()
        return self._file

    def _all_counts(self) -> list[dict[str, Any]]:
        if self.directory is None:
            with self._lock:
                return [self._counts.to_json()]
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                logger.warning("metrics: skipping unreadable %s", path)
        return found

    def _ensure_flusher(self) -> None:
        # One thread per process; a forked worker starts its own (threads do not survive fork).
        if self.directory is None or self._flusher_pid == os.getpid():
            return
        with self._lock:
            if self._flusher_pid == os.getpid():
                return
            self._flusher_pid = os.getpid()
        threading.Thread(target=self._flush_loop, name="smserve-metrics", daemon=True).start()

    def _flush_loop(self) -> None:
        assert self.directory is not None
        while True:
            self._dirty.wait()
            try:
                self.flush()
            except OSError:
                if not self.directory.exists():
                    return  # the run directory was removed: the server is exiting
                logger.warning("metrics: could not write the counts file", exc_info=True)
            time.sleep(FLUSH_INTERVAL_S)


def _labels(**labels: str) -> str:
    return ",".join(f'{name}="{_escape(value)}"' for name, value in labels.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _number(value: float) -> str:
    return format(value, "g")  # six significant digits, as TF Serving's exporter writes them


def _render(counts: Counts) -> str:
    lines = [f"# TYPE {COUNT} counter"]
    for (model, status), n in sorted(counts.requests.items()):
        lines.append(f"{COUNT}{{{_labels(model_name=model, status=status)}}} {n}")
    lines.append(f"# TYPE {LATENCY} histogram")
    for (model, api, entrypoint), histogram in sorted(counts.latency.items()):
        labels = _labels(model_name=model, API=api, entrypoint=entrypoint)
        lines.extend(_histogram_lines(labels, histogram))
    return "\n".join(lines) + "\n"


def _histogram_lines(labels: str, histogram: _Histogram) -> list[str]:
    lines, cumulative = [], 0
    limits = [_number(limit) for limit in BUCKET_LIMITS] + ["+Inf"]
    for limit, count in zip(limits, histogram.buckets, strict=True):
        cumulative += count
        lines.append(f'{LATENCY}_bucket{{{labels},le="{limit}"}} {cumulative}')
    lines.append(f"{LATENCY}_sum{{{labels}}} {_number(histogram.total)}")
    lines.append(f"{LATENCY}_count{{{labels}}} {cumulative}")
    return lines
