"""Process hygiene around native thread pools and fork, for the serving master.

Two facts drive it (both reproduced with the bundled xgboost wheel and its libgomp):

* GNU OpenMP is not fork-safe. Once a process has run a parallel region (XGBoost does when it
  loads or trains a model), a forked child that enters one hangs. So the gunicorn master never
  loads a model or trains itself: ``call_in_child`` does such work in a short-lived forked child.
* OpenMP and BLAS read their thread counts from the environment when they are loaded, so the
  caps must be in ``os.environ`` before numpy or xgboost is imported.

This module imports neither, so the CLI can import it first."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Mapping, MutableMapping
from multiprocessing.connection import Connection

from smserve.config import Settings
from smserve.errors import StartupError

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
    applies to the hook's thread only, and gthread predicts on other threads.
    """
    share = str(max(1, cpu_count // (settings.workers * settings.threads)))
    return dict.fromkeys(THREAD_VARIABLES, share)


def limit_native_threads(
    settings: Settings, environ: MutableMapping[str, str], cpu_count: int
) -> None:
    """Put ``native_thread_limits`` into ``environ`` where the user has not set a value."""
    for name, value in native_thread_limits(settings, cpu_count).items():
        environ.setdefault(name, value)


def call_in_child(function: Callable[..., object], *args: object) -> None:
    """Run ``function(*args)`` in a forked child and wait for it.

    A StartupError raised there is raised here. A child that dies any other way (its
    traceback is printed by multiprocessing) becomes a StartupError naming its exit status.
    """
    context = multiprocessing.get_context("fork")
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
        failure = StartupError(
            f"{_name(function)} failed (exit status {child.exitcode}); see the log above"
        )
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
