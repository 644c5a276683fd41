"""The hosts' collective: XGBoost's own, with no networking of ours.

The master (``sorted(hosts)[0]``) runs ``xgboost.tracker.RabitTracker`` bound to its own
address (never the wildcard address) on ``port``; every host, the master included, joins with
``xgboost.collective.CommunicatorContext`` with its index as its task id, so ranks follow the
sorted host names. Inside the group ``xgboost.train`` trains across the hosts, and the k-means
code uses :meth:`HostGroup.allreduce_sum` and :meth:`HostGroup.broadcast`.

Bounds (``SMSERVE_COLLECTIVE_TIMEOUT_S``, default 300 s, called T here): a host retries
reaching the tracker for at most T; the tracker waits at most T for every host to join (and to
say goodbye at the end); each collective operation (XGBoost's ``dmlc_timeout``) gives up after
T without progress. A host that dies breaks its peers' sockets, and they fail at once.

XGBoost itself would bind each host's peer and error listeners to the wildcard address (its
``BindHost``; not configurable) and connect from whatever address the kernel picks; while the
host is in the group, :mod:`smserve.training.collective_address` holds both to the host's own
address (``Meeting.own_address``), so every socket of the job is on it.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from smserve.algorithms.xgboost.lean_import import import_lean
from smserve.training.collective_address import held_to

logger = logging.getLogger(__name__)

RETRY_PAUSE_S = 0.01  # a refused attempt costs under 1 ms; the worker's join waits no longer
RETRY_LOG_EVERY_S = 5.0
_UNREACHABLE = "Failed to connect to the tracker"


class Group(Protocol):
    """The hosts training together; one host alone is the trivial group."""

    @property
    def rank(self) -> int: ...

    @property
    def size(self) -> int: ...

    def allreduce_sum(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...

    def broadcast(self, values: npt.NDArray[np.float64] | None) -> npt.NDArray[np.float64]: ...


class LocalGroup:
    """One host: every operation is the identity."""

    rank = 0
    size = 1

    def allreduce_sum(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return values

    def broadcast(self, values: npt.NDArray[np.float64] | None) -> npt.NDArray[np.float64]:
        assert values is not None, "the only host is the root"
        return values


LOCAL = LocalGroup()


class HostGroup:
    """Joined hosts: operations go through ``xgboost.collective``.

    XGBoost's communicator belongs to the thread that joined: from any other thread an
    allreduce is a group of one and returns this host's own values. So every operation checks
    that it runs on the joining thread, and raises RuntimeError elsewhere."""

    def __init__(self, rank: int, size: int) -> None:
        self._rank, self._size = rank, size
        self._thread = threading.get_ident()

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self._size

    def allreduce_sum(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The element-wise sum of every host's ``values`` (same shape on every host)."""
        from xgboost import collective

        self._check_thread()
        flat = np.ascontiguousarray(values, dtype=np.float64)
        return collective.allreduce(flat, collective.Op.SUM).reshape(values.shape)

    def broadcast(self, values: npt.NDArray[np.float64] | None) -> npt.NDArray[np.float64]:
        """The master's ``values`` on every host (others pass None). Sent as raw bytes (a
        bitwise OR with zeros), exactly and without pickle."""
        from xgboost import collective

        self._check_thread()
        root = self._rank == 0
        shape = np.zeros(8, dtype=np.int64)
        if root:
            assert values is not None
            shape[: values.ndim] = values.shape
            shape[values.ndim :] = -1
        shape = collective.allreduce(shape, collective.Op.SUM)  # the others add zeros
        dims = tuple(int(d) for d in shape if d >= 0)
        data = np.zeros(dims, dtype=np.float64) if not root else np.asarray(values, np.float64)
        raw = np.ascontiguousarray(data).view(np.uint8).ravel()
        merged = collective.allreduce(raw, collective.Op.BITWISE_OR)
        return merged.view(np.float64).reshape(dims)

    def _check_thread(self) -> None:
        if threading.get_ident() != self._thread:
            raise RuntimeError(
                "a collective operation ran outside the thread that joined the group; "
                "XGBoost's communicator belongs to that thread (elsewhere it sums nothing)"
            )


@dataclass(frozen=True, slots=True)
class Meeting:
    """Where the hosts meet: the master's address and port, this host's own address and its
    task id."""

    master_address: str
    own_address: str
    port: int
    task_id: int
    n_hosts: int
    timeout_s: int


@contextmanager
def joined(meeting: Meeting) -> Iterator[HostGroup]:
    """Run the tracker (on the master), join the group, and leave it at the end, every socket
    on this host's own address."""
    with held_to(meeting.own_address):
        with _joined(meeting) as group:
            yield group


@contextmanager
def _joined(meeting: Meeting) -> Iterator[HostGroup]:
    import_lean()  # a k-means job's first import of XGBoost: without its sklearn wrappers
    from xgboost import collective

    tracker = _start_tracker(meeting) if meeting.task_id == 0 else None
    try:
        context = _join(meeting)
        logger.info(
            "joined the collective as task %d of %d", collective.get_rank(), meeting.n_hosts
        )
        try:
            yield HostGroup(collective.get_rank(), collective.get_world_size())
        finally:
            context.__exit__(None, None, None)
        if tracker is not None:
            tracker.wait_for(meeting.timeout_s)
    finally:
        if tracker is not None:
            tracker.free()


def _start_tracker(meeting: Meeting) -> Any:
    from xgboost.tracker import RabitTracker

    tracker = RabitTracker(
        n_workers=meeting.n_hosts,
        host_ip=meeting.master_address,
        port=meeting.port,
        sortby="task",
        timeout=meeting.timeout_s,
    )
    tracker.start()
    logger.info(
        "tracker for %d hosts listening on %s:%d",
        meeting.n_hosts,
        meeting.master_address,
        meeting.port,
    )
    return tracker


def _join(meeting: Meeting) -> Any:
    """An entered ``CommunicatorContext``, retried while the tracker is not up yet, until the
    timeout."""
    from xgboost import collective
    from xgboost.core import XGBoostError

    deadline = time.monotonic() + meeting.timeout_s
    logged = 0.0
    while True:
        context = collective.CommunicatorContext(**_worker_args(meeting))
        try:
            with warnings.catch_warnings():  # XGBoost warns of every refused connection
                warnings.simplefilter("ignore", UserWarning)
                context.__enter__()
            return context
        except XGBoostError as exc:
            if _UNREACHABLE not in str(exc) or time.monotonic() >= deadline:
                raise
        if time.monotonic() - logged >= RETRY_LOG_EVERY_S:
            logger.info("waiting for the tracker at %s:%d", meeting.master_address, meeting.port)
            logged = time.monotonic()
        time.sleep(RETRY_PAUSE_S)


def _worker_args(meeting: Meeting) -> dict[str, str | int]:
    return {
        "dmlc_communicator": "rabit",
        "dmlc_tracker_uri": meeting.master_address,
        "dmlc_tracker_port": meeting.port,
        "dmlc_task_id": str(meeting.task_id),
        "dmlc_timeout": meeting.timeout_s,
        "dmlc_retry": 1,
    }


_BROKEN = ("allreduce", "allgather", "broadcast", "socket", "connection", "eof", "tracker", "poll")


def collective_broke(error: Exception) -> bool:
    """Whether an XGBoost error comes from the collective breaking (a host gone)."""
    from xgboost import collective

    text = str(error).lower()
    return collective.is_distributed() and any(word in text for word in _BROKEN)


def collective_reason(error: Exception) -> str:
    """The lines of an XGBoost collective error that say what broke, without the trace."""
    lines = [line.strip(" -") for line in str(error).splitlines()]
    said = [line.split("]: ", 1)[-1] for line in lines if line and not line.startswith("[bt]")]
    kept = [line for line in said if line and not line.startswith(("Stack trace", "["))]
    detail = "; ".join(kept) or "the collective failed"
    return f"{detail} (another host stopped, or the network between the hosts failed)"
