"""What the HTTP layer keeps on the Flask app: the settings, the opened doors, the metrics, and
whether this worker is ready; and the request body, read so that its size limit holds.

Readiness is what ``/ping`` reports: a worker's app answers once its models exist and 503
(ModelNotReady, in the door's own envelope) before."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app, request
from gunicorn.http.errors import ParseException
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from smserve.config import Settings
from smserve.doors import DoorSpec, Mount
from smserve.errors import InvalidInput, ModelNotReady, PayloadTooLarge
from smserve.http.draining import mark_unreadable
from smserve.metrics import Metrics
from smserve.repository.modes import Models

SETTINGS_KEY = "smserve.settings"
MODELS_KEY = "smserve.models"
DOORS_KEY = "smserve.doors"
DISCONNECTED_MESSAGE = "the request body could not be read completely (did the client disconnect?)"


@dataclass(frozen=True, slots=True)
class OpenDoor:
    """A door of the table (``spec``) opened over this app's models (``mount``)."""

    spec: DoorSpec
    mount: Mount


@dataclass(frozen=True, slots=True)
class Serving:
    """What every request of this app shares: the doors, opened in the table's order, and
    the metrics."""

    doors: tuple[OpenDoor, ...]
    metrics: Metrics


def install(app: Flask, settings: Settings, models: Models | None) -> None:
    """Attach ``settings`` and ``models`` (None: not ready yet) to ``app``."""
    app.extensions[SETTINGS_KEY] = settings
    app.extensions[MODELS_KEY] = models


def check_ready(app: Flask) -> None:
    """Raises ModelNotReady (503) while ``app`` has no models."""
    if app.extensions.get(MODELS_KEY) is None:
        raise ModelNotReady("the model is not loaded yet; retry shortly")


def serving_of(app: Flask) -> Serving:
    serving: Serving = app.extensions[DOORS_KEY]
    return serving


def current_serving() -> Serving:
    return serving_of(current_app)


def read_body() -> bytes:
    """The request body, with or without a Content-Length (chunked uploads).

    Raises PayloadTooLarge (413) over the app's MAX_CONTENT_LENGTH, InvalidInput (400) for a
    body that cannot be read to its end. Werkzeug stops reading a chunked body at the limit
    without an error, which would hand the model a truncated batch; reading one byte past the
    limit tells a body that is too large from one that fits exactly.
    """
    limit = request.max_content_length
    try:
        return _read(limit)
    except RequestEntityTooLarge:
        raise PayloadTooLarge.over(limit or 0) from None
    except ClientDisconnected:
        mark_unreadable(request.environ)
        raise InvalidInput(DISCONNECTED_MESSAGE) from None
    except ParseException as exc:  # gunicorn's chunked reader (only without nginx)
        mark_unreadable(request.environ)
        raise InvalidInput(f"malformed chunked request body: {exc}") from None


def _read(limit: int | None) -> bytes:
    if limit is None:
        return request.get_data()
    request.max_content_length = limit + 1
    body = request.get_data()
    if len(body) > limit:
        raise RequestEntityTooLarge()
    return body
