"""Answers Flask gives itself, outside any door: an unrouted path (404), a method a route does
not allow (405), and anything raised outside a door's handler. Each is in the default door's
envelope (the first of ``smserve.door_table``), built from ``smserve.failures``.

Handlers are registered on the app, not on a blueprint, because blueprint handlers never see
routing errors (404, 405)."""

from __future__ import annotations

from http import HTTPStatus

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge

from smserve.door_table import default_envelope
from smserve.doors import DoorReply
from smserve.errors import PayloadTooLarge
from smserve.failures import Failure, describe
from smserve.http.doors import to_response
from smserve.media import JSON


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)


def _http_error(exc: HTTPException) -> Response:
    status = exc.code or HTTPStatus.INTERNAL_SERVER_ERROR
    # Keep headers such as Allow; the body and its type are ours.
    headers = tuple((k, v) for k, v in exc.get_headers() if k.lower() != "content-type")
    return to_response(failure_reply(Failure(status, _http_message(exc)), headers))


def _http_message(exc: HTTPException) -> str:
    where = f"{request.method} {request.path}"
    if isinstance(exc, NotFound):
        return f"no such route: {where}"
    if isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(sorted(exc.valid_methods or ()))
        return f"{request.method} is not allowed on {request.path}; allowed: {allowed}"
    if isinstance(exc, RequestEntityTooLarge):
        return PayloadTooLarge.over(current_app.config["MAX_CONTENT_LENGTH"] or 0).message
    return exc.description or HTTPStatus(exc.code or 500).phrase


def _unexpected_error(exc: Exception) -> Response:
    failure = describe(exc, f"{request.method} {request.path}")
    return to_response(failure_reply(failure))


def failure_reply(failure: Failure, headers: tuple[tuple[str, str], ...] = ()) -> DoorReply:
    """``failure`` in the default door's envelope."""
    body = default_envelope().body(failure.message)
    return DoorReply(failure.status, body, JSON, headers)
