"""What this container may use: CPUs and memory, as its cgroup limits say.

SageMaker inference components, serverless endpoints, ECS tasks and Kubernetes pods all limit
a container through cgroups, not through what ``os.cpu_count()`` or the physical memory
report: a 1-CPU, 1 GiB container on a 64-CPU host sees 64 CPUs. So the server sizes itself
(workers, native threads, memory budgets) from ``detect()``:

* CPUs: the cgroup CPU quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``),
  else the affinity mask (a cpuset), else the host's count; never more than the affinity mask.
* Memory: the cgroup memory limit (v2 ``memory.max``, v1 ``memory.limit_in_bytes``), else
  physical memory.

The process's own cgroup (``/proc/self/cgroup``) and each of its ancestors up to the mount
point are read, and the tightest limit wins, since a parent's limit binds its children; a
container with its own cgroup namespace sees its cgroup as the root. Anything unreadable
counts as no limit. ``root`` is injectable, so tests build a fake ``/proc`` and ``/sys``.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CGROUP_MOUNT = PurePosixPath("sys/fs/cgroup")
V1_UNLIMITED = 1 << 62  # v1 writes "no limit" as a page-rounded 2**63 - 1
MIB = 1 << 20
# How the memory is divided (docs/formats.md): half of it for the requests in flight, each
# request thread an equal share; of the rest, 90% minus what the processes themselves take
# (nginx and the gunicorn master; each worker's interpreter, libraries and buffers) for
# models, which every worker holds a copy of. The other 10% is slack for the page cache and
# the estimate's error, so a multi-model load answers 507 before the kernel's OOM killer acts.
REQUEST_SHARE = 0.5
MODEL_SHARE = 0.4
FRONT_END_BYTES = 128 * MIB
WORKER_BYTES = 160 * MIB
MIN_REQUEST_BYTES = 64 * MIB
MIN_MODEL_BUDGET_BYTES = 32 * MIB


@dataclass(frozen=True, slots=True)
class Resources:
    """``cpus``: CPUs this container may keep busy (fractional under a quota);
    ``memory_bytes``: memory it may use; the sources say where each figure came from."""

    cpus: float
    memory_bytes: int
    cpu_source: str
    memory_source: str

    @property
    def cpu_count(self) -> int:
        """Whole CPUs to size worker and thread counts by (a 1.5-CPU quota sizes for 1)."""
        return max(1, math.floor(self.cpus + 1e-9))

    def request_memory(self, workers: int, threads: int) -> int:
        """The default per-request memory budget: ``REQUEST_SHARE`` of the memory, divided
        among every request thread of every worker."""
        share = int(self.memory_bytes * REQUEST_SHARE) // (workers * threads)
        return max(MIN_REQUEST_BYTES, share)

    def model_budget(self, workers: int) -> int:
        """The default multi-model budget of one worker (each holds every model)."""
        overhead = FRONT_END_BYTES + workers * WORKER_BYTES
        usable = int(self.memory_bytes * MODEL_SHARE) - overhead
        return max(MIN_MODEL_BUDGET_BYTES, usable // workers)

    def describe(self) -> str:
        """One line for the log: the figures and their sources."""
        return (
            f"{self.cpus:g} CPUs ({self.cpu_source}), "
            f"{self.memory_bytes / 2**20:.0f} MiB of memory ({self.memory_source})"
        )


def detect(root: Path = Path("/")) -> Resources:
    """This process's limits, read under ``root`` (see the module doc)."""
    cgroup = _Cgroups(root)
    affinity = _affinity_count()
    quota = cgroup.cpu_quota()
    if quota is not None and quota < affinity:
        cpus, cpu_source = quota, f"cgroup {cgroup.cpu_version} CPU quota"
    else:
        cpus, cpu_source = float(affinity), "affinity mask"
    physical = _physical_memory()
    limit = cgroup.memory_limit()
    if limit is not None and limit < physical:
        return Resources(cpus, limit, cpu_source, f"cgroup {cgroup.memory_version} memory limit")
    return Resources(cpus, physical, cpu_source, "physical memory")


class _Cgroups:
    """The cgroup files of this process under ``root``, v2 (unified) or v1."""

    def __init__(self, root: Path) -> None:
        self.mount = root / CGROUP_MOUNT
        self.paths = _membership(root / "proc/self/cgroup")
        self.cpu_version = "v2" if self._unified() else "v1"
        self.memory_version = self.cpu_version

    def _unified(self) -> bool:
        return (self.mount / "cgroup.controllers").is_file()

    def cpu_quota(self) -> float | None:
        """The tightest quota in CPUs along this cgroup's path, None when unlimited."""
        if self._unified():
            found = [_v2_quota(d / "cpu.max") for d in self._dirs(self.mount, "")]
        else:
            found = [_v1_quota(d) for d in self._dirs(self.mount / "cpu", "cpu")]
        return min((q for q in found if q is not None), default=None)

    def memory_limit(self) -> int | None:
        """The tightest memory limit in bytes along this cgroup's path, None when unlimited."""
        if self._unified():
            found = [_read_int(d / "memory.max") for d in self._dirs(self.mount, "")]
        else:
            dirs = self._dirs(self.mount / "memory", "memory")
            found = [_read_int(d / "memory.limit_in_bytes") for d in dirs]
        limits = [value for value in found if value is not None and value < V1_UNLIMITED]
        return min(limits, default=None)

    def _dirs(self, hierarchy: Path, controller: str) -> Iterator[Path]:
        """The process's cgroup directory in ``hierarchy`` and each ancestor up to its root."""
        relative = PurePosixPath(self.paths.get(controller, "/")).relative_to("/")
        for depth in range(len(relative.parts), -1, -1):
            directory = hierarchy.joinpath(*relative.parts[:depth])
            if directory.is_dir():
                yield directory


def _membership(path: Path) -> dict[str, str]:
    """``/proc/self/cgroup`` as {controller: path}; the v2 line (``0::/path``) under ""."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    paths = {}
    for line in lines:
        _, controllers, where = (line.split(":", 2) + ["", ""])[:3]
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller.removeprefix("name=")] = where or "/"
    return paths


def _v2_quota(path: Path) -> float | None:
    """``cpu.max`` ("max 100000" or "<quota> <period>") in CPUs; None when unlimited."""
    try:
        quota, _, period = path.read_text().strip().partition(" ")
    except OSError:
        return None
    if quota == "max" or not (quota.isdigit() and period.isdigit()) or int(period) == 0:
        return None
    return int(quota) / int(period)


def _v1_quota(directory: Path) -> float | None:
    quota = _read_int(directory / "cpu.cfs_quota_us")
    period = _read_int(directory / "cpu.cfs_period_us")
    if quota is None or period is None or quota <= 0 or period <= 0:
        return None
    return quota / period


def _read_int(path: Path) -> int | None:
    """A file holding one integer; None when it is missing, unreadable or says "max"."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.lstrip("-").isdigit() else None


def _affinity_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 40  # unknown: no limit worth sizing by


def return_freed_memory() -> None:
    """Hand the memory the C allocator holds but no longer uses back to the kernel (glibc's
    ``malloc_trim``); a no-op elsewhere. Loading a model frees far more than the model keeps
    (XGBoost's JSON parser above all: ~10x the file, bench/inprocess/model_memory.py), and
    glibc keeps freed memory resident, where it counts against the container's limit like a
    model."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        function: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return None
    return function
