"""Every failed request becomes ``{"error": "<message>"}`` with Content-Type application/json.

Handlers are registered on the app, not on a blueprint, because blueprint handlers never see
routing errors (404, 405). ServingError carries its own status and client-safe message;
Werkzeug's HTTP errors get a message that says what to do; anything else is a 500 with a fixed
message, and its traceback goes to the log only."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from http import HTTPStatus

from flask import Flask, Response, current_app, request
from gunicorn.http.errors import ParseException
from werkzeug.exceptions import (
    ClientDisconnected,
    HTTPException,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
)

from smserve.errors import PayloadTooLarge, ServingError
from smserve.http.draining import mark_unreadable
from smserve.media import JSON

logger = logging.getLogger(__name__)

INTERNAL_ERROR_MESSAGE = "internal server error"
DISCONNECTED_MESSAGE = "the request body could not be read completely (did the client disconnect?)"


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(ServingError, _serving_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(ParseException, _malformed_body)
    app.register_error_handler(Exception, _unexpected_error)


def error_response(status: int, message: str, headers: Iterable[tuple[str, str]] = ()) -> Response:
    """The JSON error envelope; Content-Length is set because the body is bytes.

    ``message`` repeats ``error`` because botocore reads a JSON error's text only from a
    ``message`` key: with it, boto3 and the SageMaker SDK pointed at the container show our
    message in ``ClientError`` instead of an empty string.
    """
    body = json.dumps({"error": message, "message": message}).encode()
    return Response(body, status=status, content_type=JSON, headers=list(headers))


def serving_error_response(exc: ServingError, method: str, path: str) -> Response:
    """The answer to a ServingError raised by ``method path``, logged by its kind."""
    if exc.status == HTTPStatus.INTERNAL_SERVER_ERROR:
        logger.error("%s %s failed: %s", method, path, exc.message, exc_info=exc)
    else:  # the client's mistake, or a state (503, 507) the status already explains
        logger.debug("%s %s: %d %s", method, path, exc.status, exc.message)
    return error_response(exc.status, exc.message)


def unexpected_error_response(exc: Exception, method: str, path: str) -> Response:
    """A 500 with a fixed message; the traceback goes to the log only."""
    logger.error("%s %s failed", method, path, exc_info=exc)
    return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR_MESSAGE)


def _serving_error(exc: ServingError) -> Response:
    return serving_error_response(exc, request.method, request.path)


def _http_error(exc: HTTPException) -> Response:
    status = exc.code or HTTPStatus.INTERNAL_SERVER_ERROR
    if isinstance(exc, ClientDisconnected):
        mark_unreadable(request.environ)
    # Keep headers such as Allow; the body and its type are ours.
    headers = [(k, v) for k, v in exc.get_headers() if k.lower() != "content-type"]
    return error_response(status, _http_message(exc), headers)


def _http_message(exc: HTTPException) -> str:
    where = f"{request.method} {request.path}"
    if isinstance(exc, NotFound):
        return f"no such route: {where}"
    if isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(sorted(exc.valid_methods or ()))
        return f"{request.method} is not allowed on {request.path}; allowed: {allowed}"
    if isinstance(exc, RequestEntityTooLarge):
        return _too_large_message()
    if isinstance(exc, ClientDisconnected):
        return DISCONNECTED_MESSAGE
    return exc.description or HTTPStatus(exc.code or 500).phrase


def _too_large_message() -> str:
    limit: int = current_app.config["MAX_CONTENT_LENGTH"] or 0
    return PayloadTooLarge.over(limit).message


def _malformed_body(exc: Exception) -> Response:
    """gunicorn's reader refused the body while the app read it (a bad chunk size, a missing
    chunk terminator): the client's mistake. Only without nginx, which checks chunks itself."""
    logger.debug("%s %s: malformed body: %s", request.method, request.path, exc)
    mark_unreadable(request.environ)
    return error_response(HTTPStatus.BAD_REQUEST, f"malformed chunked request body: {exc}")


def _unexpected_error(exc: Exception) -> Response:
    return unexpected_error_response(exc, request.method, request.path)
