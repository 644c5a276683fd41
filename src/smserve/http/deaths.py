"""Why a process that loaded a model died, told apart: a crash (a signal such as SIGSEGV or
SIGABRT, a fault inside a native library such as XGBoost, most likely on an invalid model
file), the kernel's out-of-memory killer (its cgroup's ``oom_kill`` count rose while the
process loaded), or another SIGKILL. The count is the cgroup's own record: v2's
``memory.events``, v1's ``memory.oom_control``; where neither is readable, a SIGKILL is
reported as either. Imports neither numpy nor xgboost."""

from __future__ import annotations

import signal
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def oom_kills(root: Path = Path("/")) -> int | None:
    """How many processes the out-of-memory killer has killed in this process's cgroup (and
    below), or None when the cgroup does not say."""
    for events in _event_files(root):
        try:
            lines = events.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def _event_files(root: Path) -> list[Path]:
    mount = root / CGROUP_ROOT.relative_to("/")
    try:
        lines = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        lines = []
    found = []
    for line in lines:
        _, controllers, where = (line.split(":", 2) + ["", ""])[:3]
        relative = where.strip().lstrip("/")
        if controllers == "":
            found.append(mount / relative / "memory.events")
        elif "memory" in controllers.split(","):
            found.append(mount / "memory" / relative / "memory.oom_control")
    return [*found, mount / "memory.events"]


def described(exitcode: int | None, oom_before: int | None, oom_after: int | None) -> str:
    """How a process that was loading ended (``exitcode`` as multiprocessing gives it: the
    negated signal number when a signal ended it), in words."""
    if exitcode is None or exitcode >= 0:
        return f"failed (exit status {exitcode})"
    number = -exitcode
    name = _signal_name(number)
    if number != signal.SIGKILL:
        return (
            f"crashed with {name} (signal {number}) while loading: a fault inside a native "
            "library (XGBoost), not a lack of memory; most likely the model file is invalid"
        )
    if oom_before is not None and oom_after is not None:
        if oom_after > oom_before:
            return (
                f"was killed by the kernel's out-of-memory killer ({name}; the cgroup's "
                f"oom_kill count rose from {oom_before} to {oom_after}): loading needs more "
                "memory than this container has (raise its memory limit)"
            )
        return (
            f"was killed ({name}) by another process, not by the out-of-memory killer (the "
            f"cgroup's oom_kill count stayed at {oom_after})"
        )
    return (
        f"was killed ({name}): by the kernel's out-of-memory killer if loading needs more "
        "memory than this container has, or by another process (this container's cgroup does "
        "not record out-of-memory kills)"
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
