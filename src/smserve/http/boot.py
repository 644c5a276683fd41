"""Why a worker could not start, carried from the worker to the command that started the server.

The model is loaded once, by each worker as it boots (the master never loads one: see
http/process.py). A model that cannot load must still end ``serve`` at once with its cause
(exit status 2 and the message), not leave a server answering 503 or respawning workers
forever. Two ways a worker fails to boot:

* loading raises (StartupError: the model or its configuration is wrong; MemoryError): the
  worker writes the message to ``start-failure`` in the run directory and exits with
  gunicorn's boot-error status, on which the master halts;
* the worker dies without a word, almost always the kernel's out-of-memory killer (SIGKILL),
  which gunicorn would answer by forking another worker to be killed the same way. Each worker
  marks itself ``loading/<pid>`` until its model is loaded; the master's ``child_exit`` hook
  finds the mark of a worker that died loading, writes why, and halts.

``run`` then reads ``start-failure`` and raises it as a StartupError."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gunicorn.errors import HaltServer

from smserve.errors import StartupError

FAILURE_FILE = "start-failure"
LOADING_DIR = "loading"
logger = logging.getLogger(__name__)
BOOT_ERROR_STATUS = 3  # gunicorn's WORKER_BOOT_ERROR
DIED_LOADING = (
    "a worker died while loading the model (pid {pid}) without reporting an error: almost "
    "always the kernel's out-of-memory killer (SIGKILL): loading needs more memory than this "
    "container has (raise its memory limit, or serve the model in XGBoost's UBJSON format, "
    "whose load needs far less memory than JSON's)"
)

App = TypeVar("App")


def load_reporting(factory: Callable[[], App], run_dir: Path | None) -> App:
    """``factory()`` in a worker, marked as loading while it runs; a StartupError or
    MemoryError it raises is written for the master before it propagates."""
    if run_dir is None:
        return factory()
    mark = _loading_mark(run_dir, os.getpid())
    mark.parent.mkdir(exist_ok=True)
    mark.touch()
    try:
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


def died_loading(run_dir: Path, pid: int, stopping: bool) -> None:
    """In the master, once worker ``pid`` has exited: raises HaltServer when it died while
    loading (its mark is still there) and the server is not stopping anyway."""
    mark = _loading_mark(run_dir, pid)
    if not mark.exists():
        return
    mark.unlink(missing_ok=True)
    if stopping:
        return
    if read_failure(run_dir) is None:
        record_failure(run_dir, DIED_LOADING.format(pid=pid))
    raise HaltServer("a worker failed to load the model", BOOT_ERROR_STATUS)


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
