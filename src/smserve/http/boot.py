"""Why a worker could not start, carried from the worker to the command that started the server.

The model is loaded once, by each worker as it boots (the master never loads one: see
http/process.py). A model that cannot load must still end ``serve`` at once with its cause
(exit status 2 and the message), not leave a server answering 503 or respawning workers
forever. Two ways a worker fails to boot:

* loading raises (StartupError: the model or its configuration is wrong; MemoryError): the
  worker writes the message to ``start-failure`` in the run directory and exits with
  gunicorn's boot-error status, on which the master halts;
* the worker dies without a word: it crashed (SIGSEGV, SIGABRT: a fault inside XGBoost), or
  the kernel's out-of-memory killer or another process killed it (SIGKILL); gunicorn would
  answer by forking another worker to die the same way. Each worker marks itself
  ``loading/<pid>`` until its model is loaded, the mark holding its cgroup's out-of-memory
  kill count, and has ``faulthandler`` write a crash to ``loading/<pid>.fault``; the
  master's ``child_exit`` hook finds the mark of a worker that died loading, tells which it
  was (``deaths``), writes why, and halts.

``run`` then reads ``start-failure`` and raises it as a StartupError."""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from gunicorn.errors import HaltServer

from smserve.errors import StartupError
from smserve.http import deaths

FAILURE_FILE = "start-failure"
LOADING_DIR = "loading"
logger = logging.getLogger(__name__)
BOOT_ERROR_STATUS = 3  # gunicorn's WORKER_BOOT_ERROR
DIED_LOADING = "a worker died while loading the model (pid {pid}) without reporting an error: "
CRASHED_LOADING = (
    "a worker crashed while loading the model (pid {pid}): {fault}: a fault inside a native "
    "library (XGBoost), not a lack of memory; most likely the model file is invalid"
)
UBJSON_HINT = (
    " (or serve the model in XGBoost's UBJSON format, whose load needs far less memory than JSON's)"
)

App = TypeVar("App")


def load_reporting(factory: Callable[[], App], run_dir: Path | None) -> App:
    """``factory()`` in a worker, marked as loading while it runs; a StartupError or
    MemoryError it raises is written for the master before it propagates."""
    if run_dir is None:
        return factory()
    mark = _loading_mark(run_dir, os.getpid())
    mark.parent.mkdir(exist_ok=True)
    mark.write_text(str(deaths.oom_kills()))
    try:
        with _fault_record(mark):
            app = factory()
    except (StartupError, MemoryError) as exc:
        said = str(exc) or type(exc).__name__
        record_failure(run_dir, said)
        mark.unlink(missing_ok=True)  # it said why: the boot-error status halts the master
        # One line, not gunicorn's traceback: the command that started the server prints it.
        logger.error("worker %d cannot start: %s", os.getpid(), said)
        raise SystemExit(BOOT_ERROR_STATUS) from None
    mark.unlink(missing_ok=True)
    return app


@contextlib.contextmanager
def _fault_record(mark: Path) -> Iterator[None]:
    """While loading, a crash (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL) writes its Python
    traceback to ``<mark>.fault`` for the master; faulthandler as it was afterwards."""
    was_enabled = faulthandler.is_enabled()
    path = mark.with_name(mark.name + ".fault")
    try:
        with path.open("w") as record:
            faulthandler.enable(record)
            try:
                yield
            finally:
                faulthandler.disable()
                if was_enabled:
                    _enable_again()
    finally:
        path.unlink(missing_ok=True)


def _enable_again() -> None:
    """faulthandler back on standard error, as it was; a standard error without a file
    descriptor (a test's capture) must not turn a reported load failure into another error."""
    with contextlib.suppress(ValueError, OSError):  # io.UnsupportedOperation is both
        faulthandler.enable()


def died_loading(run_dir: Path, pid: int, stopping: bool) -> None:
    """In the master, once worker ``pid`` has exited: raises HaltServer when it died while
    loading (its mark is still there) and the server is not stopping anyway."""
    mark = _loading_mark(run_dir, pid)
    try:
        recorded = mark.read_text().strip()
    except OSError:
        return
    before = int(recorded) if recorded.isdigit() else None
    mark.unlink(missing_ok=True)
    if stopping:
        return
    if read_failure(run_dir) is None:
        record_failure(run_dir, why_died(mark, pid, before))
    raise HaltServer("a worker failed to load the model", BOOT_ERROR_STATUS)


def why_died(mark: Path, pid: int, oom_before: int | None) -> str:
    """The message for worker ``pid``, which died loading: its crash, if it recorded one,
    else a kill told apart by the cgroup's out-of-memory count (``deaths``)."""
    fault = mark.with_name(mark.name + ".fault")
    try:
        crash = fault.read_text(errors="replace").strip().splitlines()
    except OSError:
        crash = []
    fault.unlink(missing_ok=True)
    if crash:
        return CRASHED_LOADING.format(pid=pid, fault=crash[0])
    told = deaths.described(-signal.SIGKILL, oom_before, deaths.oom_kills())
    hint = UBJSON_HINT if "out-of-memory" in told else ""
    return DIED_LOADING.format(pid=pid) + "it " + told + hint


def record_failure(run_dir: Path, message: str) -> None:
    (run_dir / FAILURE_FILE).write_text(message, encoding="utf-8")


def read_failure(run_dir: Path | None) -> str | None:
    """What a worker recorded about failing to start, or None."""
    if run_dir is None:
        return None
    try:
        return (run_dir / FAILURE_FILE).read_text(encoding="utf-8")
    except OSError:
        return None


def _loading_mark(run_dir: Path, pid: int) -> Path:
    return run_dir / LOADING_DIR / str(pid)
