"""Where a benchmark run's CPU went: per process of a server's process tree (its workers, its
nginx, its supervisor), and the machine's steal time, from ``/proc``. A run's
figures are two samples' difference (``Usage.minus``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """CPU seconds per process (``name pid``) and the machine's steal seconds."""

    processes: dict[str, float] = field(default_factory=dict)
    steal_s: float = 0.0

    def minus(self, earlier: Usage) -> Usage:
        spent = {
            name: seconds - earlier.processes.get(name, 0.0)
            for name, seconds in self.processes.items()
        }
        return Usage({k: v for k, v in spent.items() if v > 0.005}, self.steal_s - earlier.steal_s)

    def __str__(self) -> str:
        busiest = sorted(self.processes.items(), key=lambda item: -item[1])[:4]
        listed = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in busiest)
        return f"cpu: {listed}; steal {self.steal_s:.2f} s"


def sample(root: int) -> Usage:
    """The process ``root`` and every descendant of it, and the machine's steal time."""
    return Usage({f"{_name(pid)} {pid}": _cpu_s(pid) for pid in tree(root)}, _steal_s())


def tree(root: int) -> list[int]:
    """``root`` and every process descended from it (from each process's parent in /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _name(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode(errors="replace") for w in words if w)
    for known in ("nginx: worker", "nginx: master", "gunicorn"):
        if known in text:
            return known.replace(": ", "-")
    return Path(words[0].decode(errors="replace")).name if words else "?"


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime


def _steal_s() -> float:
    cpu = Path("/proc/stat").read_text().splitlines()[0].split()
    return int(cpu[8]) * TICK_S
