"""The one mapping from an exception to what a client is told: a status and a message.

Every door builds its error envelope from a Failure (``{"error", "message"}`` for SageMaker,
``{"error"}`` for TF Serving and V2), so statuses, messages and logging never differ between
doors. A ServingError carries its own status and client-safe message (never longer than
``errors.MESSAGE_CHARS``); anything else is a 500 with a fixed message, its traceback in the
log only."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from http import HTTPStatus

from smserve.errors import ServingError, bounded

logger = logging.getLogger(__name__)

INTERNAL_ERROR_MESSAGE = "internal server error"


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
