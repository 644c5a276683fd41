"""What views need besides Flask's request: the app's settings and inference service, and the
request body, read so that its size limit holds.

The service's presence is the readiness flag that ``/ping`` reports: a worker's app answers
200 once its service exists and 503 before."""

from __future__ import annotations

from typing import Protocol

from flask import Flask, current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

from smserve.config import Settings
from smserve.errors import ModelNotReady
from smserve.service import Reply

SETTINGS_KEY = "smserve.settings"
SERVICE_KEY = "smserve.service"


class Invoker(Protocol):
    """What /invocations calls: an InferenceService, or ``http.models``' router over several."""

    def invoke(
        self,
        body: bytes,
        content_type: str | None,
        accept: str | None,
        attributes: str | None = None,
    ) -> Reply | None: ...


def install(app: Flask, settings: Settings, service: Invoker | None) -> None:
    """Attach ``settings`` and ``service`` (None: not ready yet) to ``app``."""
    app.extensions[SETTINGS_KEY] = settings
    app.extensions[SERVICE_KEY] = service


def current_settings() -> Settings:
    settings: Settings = current_app.extensions[SETTINGS_KEY]
    return settings


def current_service() -> Invoker:
    """This app's service; raises ModelNotReady (503) while there is none."""
    return service_of(current_app)


def service_of(app: Flask) -> Invoker:
    """``app``'s service, outside a request context too; raises ModelNotReady (503)."""
    service: Invoker | None = app.extensions.get(SERVICE_KEY)
    if service is None:
        raise ModelNotReady("the model is not loaded yet; retry shortly")
    return service


def read_body() -> bytes:
    """The request body, with or without a Content-Length (chunked uploads).

    Raises RequestEntityTooLarge (413) over the app's MAX_CONTENT_LENGTH. Werkzeug stops reading
    a chunked body at the limit without an error, which would hand the model a truncated batch;
    reading one byte past the limit tells a body that is too large from one that fits exactly.
    """
    limit = request.max_content_length
    if limit is None:
        return request.get_data()
    request.max_content_length = limit + 1
    body = request.get_data()
    if len(body) > limit:
        raise RequestEntityTooLarge()
    return body
