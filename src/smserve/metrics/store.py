"""One process's counts, written to a file of its own, and the sum of every such file.

Aggregation across workers. Each worker counts in memory and writes its counts, whole, to its
own file (``<run dir>/metrics/<pid>-<id>.json``, replaced atomically) at most once a second
from a background thread, and right before it answers a scrape itself. A scrape reads every
file and sums them, in whichever process answers it: the supervisor beside nginx (never
queued behind inference), or a worker with gunicorn alone. Files of workers that exited stay,
so counters never go down when gunicorn replaces a worker; a new server run starts from an
empty run directory. Another worker's counts are at most about a second old.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smserve.metrics.protocol import ProtocolCounts, ProtocolNames
from smserve.metrics.serving import ServingCounts

logger = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 1.0
MASTER_FILE = "master.json"  # the gunicorn master's count of worker exits
Stages = tuple[float, float, float]


class Metrics:
    """This process's metrics; ``directory`` (None: this process only) holds every worker's
    file. Thread-safe. ``models_loaded`` tells how many models this process serves now."""

    def __init__(self, directory: Path | None, models_loaded: Callable[[], int] = int) -> None:
        self.directory = directory
        self.models_loaded = models_loaded
        self.protocols: dict[str, ProtocolCounts] = {}  # by count family: each protocol's
        self.serving = ServingCounts()
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._dirty = threading.Event()
        self._file: Path | None = None
        self._file_pid: int | None = None
        self._flusher_pid: int | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    # -- requests --------------------------------------------------------------------------

    def record(
        self, names: ProtocolNames, model: str, status: int, api: str, seconds: float | None
    ) -> None:
        """Count one request in a protocol's ``names`` alone; ``seconds`` only for a success."""
        with self._lock:
            self._counts(names).record(model, names.status(status), api, seconds)
        self._changed()

    def _counts(self, names: ProtocolNames) -> ProtocolCounts:
        counts = self.protocols.get(names.count)
        if counts is None:
            counts = self.protocols[names.count] = ProtocolCounts(names)
        return counts

    def begin(self) -> None:
        """A request has started (``requests_in_flight``); ``finish`` ends it."""
        with self._lock:
            self.serving.in_flight += 1
        self._changed()

    def finish(self, answered: Answered, protocols: Sequence[ProtocolNames] = ()) -> None:
        """Count a request ``begin`` started, also in each of ``protocols``' names."""
        seconds, status = answered.seconds, answered.key[3]
        with self._lock:
            serving = self.serving
            serving.in_flight -= 1
            serving.count(answered.key, answered.size_in, answered.size_out)
            if status < 300:
                serving.duration[answered.key[:2]].observe(seconds)
                if answered.stages is not None:
                    serving.time_stages(answered.key[1], answered.stages)
            timed, named = (seconds if status < 300 else None), answered.named
            for names in protocols:
                self._counts(names).record(named, names.status(status), answered.verb, timed)
        self._changed()

    # -- models ------------------------------------------------------------------------------

    def model_loaded(self, seconds: float, succeeded: bool) -> None:
        with self._lock:
            self.serving.loads["success" if succeeded else "failure"] += 1
            if succeeded:
                self.serving.load_duration.observe(seconds)
        self._changed()

    def model_refused(self) -> None:
        with self._lock:
            self.serving.refused += 1
        self._changed()

    def model_unloaded(self) -> None:
        with self._lock:
            self.serving.unloads += 1
        self._changed()

    # -- files -------------------------------------------------------------------------------

    def render(self, names: ProtocolNames) -> str:
        """A protocol's page: its ``names`` summed over every worker's file (and this
        process's counts)."""
        total = ProtocolCounts(names)
        for data in self.all_counts():
            total.add_json(data.get("protocols", {}).get(names.count, {}))
        return total.render()

    def all_counts(self) -> list[dict[str, Any]]:
        """This process's counts (flushed first) and every other process's, as files hold
        them."""
        if self.directory is None:
            return [self._snapshot()]
        self.flush()
        return read_all(self.directory)

    def flush(self) -> None:
        """Write this process's counts to its file (no-op without a directory)."""
        if self.directory is None:
            return
        # One flush at a time, so an older snapshot never replaces a newer one.
        with self._flushing:
            self._dirty.clear()
            write_json(self.directory, self._own_file().name, self._snapshot())

    def _snapshot(self) -> dict[str, Any]:
        loaded = self.models_loaded()
        with self._lock:
            self.serving.models_loaded = loaded
            protocols = {name: c.to_json() for name, c in self.protocols.items()}
            return {"protocols": protocols, "serving": self.serving.to_json()}

    def _changed(self) -> None:
        if not self._dirty.is_set():  # set() takes a lock and wakes waiters; once is enough
            self._dirty.set()
        if self._flusher_pid != os.getpid():
            self._start_flusher()

    def _own_file(self) -> Path:
        # A forked worker inherits its parent's counts object but writes its own file.
        assert self.directory is not None
        if self._file is None or self._file_pid != os.getpid():
            self._file = self.directory / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
            self._file_pid = os.getpid()
        return self._file

    def _start_flusher(self) -> None:
        # One thread per process; a forked worker starts its own (threads do not survive fork).
        if self.directory is None:
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


class Answered:
    """One answered request, as ``Metrics.finish`` counts it: ``key`` is its labels (door,
    model, format, status); ``verb`` and ``named`` (the model the request named, as TF
    Serving's names count it) are for the protocols' names (``metrics.protocol``)."""

    __slots__ = ("key", "seconds", "size_in", "size_out", "stages", "verb", "named")

    def __init__(
        self,
        key: tuple[str, str, str, int],
        seconds: float,
        sizes: tuple[int, int],
        stages: Stages | None,
        verb: str,
        named: str | None = None,
    ) -> None:
        self.key = key
        self.seconds = seconds
        self.size_in, self.size_out = sizes
        self.stages = stages
        self.verb = verb
        self.named = key[1] if named is None else named


def count_worker_exit(directory: Path) -> None:
    """Count one worker exit in the master's file (the gunicorn master calls this)."""
    path = directory / MASTER_FILE
    try:
        exits = int(json.loads(path.read_text()).get("serving", {}).get("worker_restarts", 0))
    except (OSError, ValueError, AttributeError):
        exits = 0
    write_json(directory, MASTER_FILE, {"serving": {"worker_restarts": exits + 1}})


def read_all(directory: Path) -> list[dict[str, Any]]:
    """Every process's counts in ``directory``; unreadable files are skipped."""
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            logger.warning("metrics: skipping unreadable %s", path)
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def write_json(directory: Path, name: str, data: dict[str, Any]) -> None:
    """Replace ``directory/name`` atomically: readers see the old file or the new one."""
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    with os.fdopen(handle, "w") as stream:
        json.dump(data, stream)
    os.replace(temporary, directory / name)
