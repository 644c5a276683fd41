"""Process hygiene around native thread pools and fork, for the serving master.

Three facts drive it (the first two reproduced with the bundled xgboost wheel and its libgomp):

* GNU OpenMP is not fork-safe. Once a process has run a parallel region (XGBoost does when it
  loads or trains a model), a forked child that enters one hangs. So the gunicorn master never
  loads a model or trains itself: ``call_in_child`` does such work in a short-lived forked child.
* OpenMP and BLAS read their thread counts from the environment when they are loaded, so the
  caps must be in ``os.environ`` before numpy or xgboost is imported.
* glibc's malloc returns freed memory to the system by thresholds it adjusts as it goes, and
  gives threads more arenas when they contend for one (a thread that moved stays there; such
  an arena frees whole heaps at once). A worker answering 10,000-row requests then faulted
  its buffers in again on every request: 2,000-5,400 page faults, several ms, depending on
  the sizes involved, and 2,200 more once the overlap's helper thread (``smserve.overlap``)
  moved the request thread to a second arena. ``tune_malloc`` fixes the thresholds (blocks up
  to 32 MiB from the heap, up to 64 MiB of free heap kept for reuse) and keeps every thread
  on the main arena, except what the user set (MALLOC_* variables, GLIBC_TUNABLES); it must
  run before the first thread starts, so ``serve`` and ``score`` call it first (workers and
  their threads inherit it through fork; ``score``'s spawned workers, used only where forking
  is unsafe, do not).

This module imports neither numpy nor xgboost, so the CLI can import it first."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
from collections.abc import Callable, Mapping, MutableMapping
from multiprocessing.connection import Connection

from smserve.config import Settings
from smserve.errors import StartupError
from smserve.http import deaths

# glibc's mallopt parameters, the values tune_malloc gives them, and the environment variable
# through which a user sets each one instead (glibc reads it at start; tune_malloc leaves it)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
MALLOC_SETTINGS = (
    (M_MMAP_THRESHOLD, 32 << 20, "MALLOC_MMAP_THRESHOLD_"),
    (M_TRIM_THRESHOLD, 64 << 20, "MALLOC_TRIM_THRESHOLD_"),
    (M_ARENA_MAX, 1, "MALLOC_ARENA_MAX"),
)

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def native_thread_limits(settings: Settings, cpu_count: int) -> Mapping[str, str]:
    """Thread counts for the OpenMP/BLAS pools of one request: the CPUs divided among all
    ``workers * threads`` request threads, so concurrent predictions do not oversubscribe
    them (the built-in XGBoost container pins OMP_NUM_THREADS=1 for the same reason; with one
    worker and one thread a large batch still gets every CPU).

    Environment variables rather than threadpoolctl in a gunicorn hook: a limit set there
    applies to the hook's thread only, and the workers predict on other threads.
    """
    share = str(max(1, cpu_count // (settings.workers * settings.threads)))
    return dict.fromkeys(THREAD_VARIABLES, share)


def limit_native_threads(
    settings: Settings, environ: MutableMapping[str, str], cpu_count: int
) -> None:
    """Put ``native_thread_limits`` into ``environ`` where the user has not set a value."""
    for name, value in native_thread_limits(settings, cpu_count).items():
        environ.setdefault(name, value)


def tune_malloc(environ: Mapping[str, str]) -> None:
    """With glibc, ``malloc_settings`` for this process and its forks; elsewhere nothing."""
    if not _glibc():
        return
    with contextlib.suppress(OSError, AttributeError):
        mallopt = ctypes.CDLL(None).mallopt
        for parameter, value in malloc_settings(environ):
            mallopt(parameter, value)


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # not a POSIX system, or not glibc
        return False


def malloc_settings(environ: Mapping[str, str]) -> list[tuple[int, int]]:
    """The (parameter, value) pairs of MALLOC_SETTINGS the user has not set: neither through
    its MALLOC_* variable nor any ``glibc.malloc`` tunable in GLIBC_TUNABLES."""
    if "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        return []
    return [(parameter, value) for parameter, value, name in MALLOC_SETTINGS if name not in environ]


def call_in_child(function: Callable[..., object], *args: object) -> None:
    """Run ``function(*args)`` in a forked child and wait for it.

    A StartupError raised there is raised here. A child that dies any other way (its
    traceback is printed by multiprocessing) becomes a StartupError naming its exit status,
    or its signal: a crash, or an out-of-memory kill, told apart (``deaths``).
    """
    context = multiprocessing.get_context("fork")
    oom_before = deaths.oom_kills()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_report, args=(sender, function, args), daemon=True)
    child.start()
    sender.close()
    try:
        failure: StartupError | None = receiver.recv()
    except EOFError:  # the child died without reporting
        failure = None
    child.join()
    if failure is None and child.exitcode != 0:
        death = deaths.described(child.exitcode, oom_before, deaths.oom_kills())
        failure = StartupError(f"{_name(function)} {death}; see the log above")
    if failure is not None:
        raise failure


def _report(sender: Connection, function: Callable[..., object], args: tuple[object]) -> None:
    try:
        function(*args)
    except StartupError as exc:
        sender.send(exc)
        return
    sender.send(None)


def _name(function: Callable[..., object]) -> str:
    return getattr(function, "__qualname__", repr(function))
