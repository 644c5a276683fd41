"""The worker-process side of the local engine: each process loads the model once, in
``initialize``, and then answers mini-batches until the pool shuts down.

A process pool calls module-level functions, so the loaded Scorer lives in ``_STATE``, one per
process (as the built-in XGBoost container loads one booster per gunicorn worker)."""

from __future__ import annotations

import signal

from smserve.config import Settings
from smserve.errors import ClientError, StartupError
from smserve.scoring.options import Plan
from smserve.scoring.scorer import Scored, Scorer, build_service
from smserve.scoring.split import Chunk

_STATE: dict[str, Scorer | Exception] = {}


def initialize(settings: Settings, plan: Plan) -> None:
    """Load the model. A failure is kept and raised by ``describe``: an exception raised
    here would only break the pool, without its message."""
    # Ctrl-C reaches the whole process group; the parent alone decides how to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _STATE["scorer"] = Scorer(build_service(settings), plan)
    except (StartupError, ClientError) as exc:
        _STATE["scorer"] = exc


def describe() -> tuple[str, str]:
    """``(input type, output type)`` of this worker's plan; raises what ``initialize`` hit."""
    scorer = _scorer()
    return scorer.input_type, scorer.output_type


def score(chunk: Chunk) -> Scored:
    return _scorer().score(chunk)


def _scorer() -> Scorer:
    scorer = _STATE["scorer"]
    if isinstance(scorer, Exception):
        raise scorer
    return scorer
