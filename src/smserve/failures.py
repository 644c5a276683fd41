"""The one mapping from an exception to what a client is told: a status and a message.

Every door builds its error envelope from a Failure (``{"error", "message"}`` for SageMaker,
``{"error"}`` for TF Serving and V2), so statuses, messages and logging never differ between
doors. A ServingError carries its own status and client-safe message (never longer than
``errors.MESSAGE_CHARS``); anything else is a 500 with a fixed message, its traceback in the
log only."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from http import HTTPStatus

from smserve.errors import ServingError, bounded

logger = logging.getLogger(__name__)

INTERNAL_ERROR_MESSAGE = "internal server error"
# "[12:00:00] /__w/xgboost/xgboost/src/learner.cc:989: ", where a C++ library's message starts
_LOG_PREFIX = re.compile(r"\[\d{1,2}:\d\d:\d\d\]\s*\S+:\d+:\s*")
_PATH = re.compile(r"(?<![\w.~])/(?:[^\s/:'\"(),]+/)+([^\s/:'\"(),]+)")  # keeps the last part


@dataclass(frozen=True, slots=True)
class Failure:
    status: int
    message: str


def describe(exc: Exception, where: str) -> Failure:
    """The Failure for ``exc``, raised by ``where`` (``"POST /invocations"``), logged by kind:
    a 5xx with its traceback, the client's mistakes (and 503, 507) at debug level."""
    if not isinstance(exc, ServingError):
        logger.error("%s failed", where, exc_info=exc)
        return Failure(HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR_MESSAGE)
    if exc.status == HTTPStatus.INTERNAL_SERVER_ERROR:
        logger.error("%s failed: %s", where, exc.message, exc_info=exc)
    else:
        logger.debug("%s: %d %s", where, exc.status, exc.message)
    return Failure(int(exc.status), bounded(exc.message))


def load_message(exc: BaseException) -> str:
    """A model load's failure as a client may read it: the first line (a library's stack
    trace follows on the next), without C++ log prefixes, every absolute path shortened to
    its last part (the model's own file name)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = _LOG_PREFIX.sub("", lines[0] if lines else type(exc).__name__)
    return _PATH.sub(r"\1", first).rstrip(" :")
