"""Training failures: the client-error type, the exit codes, and the SageMaker failure file.

SageMaker reads ``/opt/ml/output/failure`` as the job's FailureReason and treats any non-zero
exit status as a failed job. This module owns how that file is written; the orchestration in
``smserve.training`` decides when.
"""

from __future__ import annotations

import logging
import os
import traceback
from pathlib import Path

logger = logging.getLogger(__name__)

EXIT_SUCCESS = 0
EXIT_CLIENT_ERROR = 1  # the job's inputs are wrong: hyperparameters, channels or data
EXIT_UNEXPECTED = 2  # a fault in this container; the failure file carries the traceback


class TrainingError(Exception):
    """The job's configuration or data is wrong; the message says what to fix."""


class HostsFailed(TrainingError):
    """Training across hosts stopped: another host failed, or the connection between them."""


def client_reason(error: TrainingError) -> str:
    """The failure-file text for a client error: the message alone, no traceback."""
    return str(error)


def unexpected_reason(error: BaseException) -> str:
    """The failure-file text for an unexpected error: a summary line, then the traceback."""
    summary = f"Unexpected error during training: {type(error).__name__}: {error}"
    trace = "".join(traceback.format_exception(error))
    return f"{summary}\n\n{trace}"


def write_failure(path: Path, reason: str) -> None:
    """Write ``reason`` to the failure file, replacing any earlier one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(reason.rstrip("\n") + "\n", encoding="utf-8")
    except OSError:
        logger.exception("could not write the failure file %s", path)


def clear_failure(path: Path) -> None:
    """Remove a failure file left by an earlier run in the same directory (local reuse)."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
