"""The run directory: state that every gunicorn worker of one server shares.

It holds the multi-model registry (``mme/``) and the per-worker metrics files (``metrics/``).
One is made per server run, inside SMSERVE_RUNTIME_DIR (default: the system temp directory),
so a restarted server never sees a previous run's models or counters:

* ``prepare`` runs in the gunicorn master before any worker is forked; workers inherit the
  directory through their Settings;
* an app built without it (tests, a single process) makes a private one for itself.

A marker file tells a prepared run directory from a parent directory given by the user. The
process that made a run directory removes it when it exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from smserve.config import Settings

MARKER = ".smserve-run"


def prepare(settings: Settings) -> Settings:
    """``settings`` with ``runtime_dir`` set to a fresh run directory (idempotent)."""
    if _is_run_dir(settings.runtime_dir):
        return settings
    parent = settings.runtime_dir
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="smserve-run-", dir=parent))
    (run_dir / MARKER).write_text(str(os.getpid()))
    atexit.register(_remove, run_dir, os.getpid())
    return settings.replace(runtime_dir=run_dir)


def run_dir(settings: Settings) -> Path:
    """The run directory of ``settings`` (made now if it was not prepared)."""
    prepared = prepare(settings).runtime_dir
    assert prepared is not None
    return prepared


def _is_run_dir(path: Path | None) -> bool:
    return path is not None and (path / MARKER).is_file()


def _remove(path: Path, owner: int) -> None:
    # atexit handlers are inherited by forked workers; only the creator removes it.
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)
