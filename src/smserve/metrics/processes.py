"""The server's processes and their resident memory, read from ``/proc`` at each scrape.

A role is a set of process trees: ``nginx`` is its master and workers, ``worker`` every
gunicorn worker (the children of the gunicorn master). Where ``/proc`` is missing (not Linux)
there is nothing to report, and the page leaves these metrics out."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class Usage:
    """How many processes a role has, and their resident memory together."""

    processes: int
    resident_bytes: int


def usage(roles: Mapping[str, Iterable[int]]) -> dict[str, Usage]:
    """Each role's processes (pids that no longer exist are left out) and memory."""
    found = {}
    for role, pids in roles.items():
        sizes = [size for size in map(resident_bytes, pids) if size is not None]
        found[role] = Usage(len(sizes), sum(sizes))
    return found


def resident_bytes(pid: int) -> int | None:
    """The resident set of ``pid`` in bytes; None once it has exited (or without /proc)."""
    try:
        fields = (PROC / str(pid) / "statm").read_text().split()
    except OSError:
        return None
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (of any of its threads)."""
    found: list[int] = []
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


def tree(pid: int) -> list[int]:
    """``pid`` and its children (one level: nginx's and gunicorn's workers)."""
    return [pid, *children(pid)]
