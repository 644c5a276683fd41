"""Demo models for ``smserve serve --demo``: trained on first start from data that ships with
scikit-learn (no downloads), cached, and reused on later starts.

Each algorithm in the table (``smserve.algorithms.catalog``) names its demo: how it is trained
and the rows of its data set (``AlgorithmSpec.demo``). XGBoost's is binary:logistic on the
breast-cancer set (30 features); k-means' is k=3 on the iris set (4 features).

A model is cached under ``<cache>/demo-<kind>/`` (cache: SMSERVE_CACHE_DIR or
~/.cache/smserve). It is written to a temporary directory that is renamed into place, so a
directory that exists is complete. Training is single-threaded, and the CLI still runs
``prepare`` in a child process: a process that has run OpenMP code cannot fork safely (see
smserve.http.process)."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

from smserve.algorithms.catalog import demo_of, spec_for
from smserve.config import Settings

logger = logging.getLogger(__name__)


def model_dir(kind: str, settings: Settings) -> Path:
    """Where the ``kind`` demo model is cached; ConfigError for an unknown ``kind`` or one
    without a demo."""
    demo_of(kind)
    cache = settings.cache_dir or Path.home() / ".cache" / "smserve"
    return cache / f"demo-{spec_for(kind).name}"


def prepare(kind: str, settings: Settings) -> None:
    """Train and cache the ``kind`` demo model unless it is cached; log how to call it."""
    target = model_dir(kind, settings)
    if target.is_dir():
        logger.info("demo %s model: %s (cached)", kind, target)
    else:
        _build(kind, target)
        logger.info("demo %s model trained into %s", kind, target)
    logger.info("try: %s", sample_request(kind, settings.port))


def sample_request(kind: str, port: int) -> str:
    """A curl command that sends the demo's first row as CSV."""
    row = ",".join(f"{value:g}" for value in demo_of(kind).rows()[0])
    return (
        f"curl -s -X POST http://localhost:{port}/invocations "
        f"-H 'Content-Type: text/csv' -H 'Accept: application/json' --data '{row}'"
    )


def _build(kind: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        demo_of(kind).train(staging)
        staging.rename(target)
    except OSError:
        # Another start renamed its copy into place first; theirs is as good as ours.
        if not target.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
