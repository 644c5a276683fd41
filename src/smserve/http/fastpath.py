"""``POST /invocations`` and ``GET /ping`` answered in front of Flask, byte for byte as Flask
would answer them.

An endpoint serves these two requests all day, and for a small batch Flask's per-request work
(request context, routing, hooks, Response objects) costs more than decoding, predicting and
encoding together. ``FastPath`` wraps the Flask app's ``wsgi_app`` and answers exactly:

* ``GET /ping``: the 200, or the 503 before the model is loaded;
* ``POST /invocations`` with a Content-Length (no Transfer-Encoding) within the payload
  limit: the body is read in one call, then the same router, service, error envelopes
  (``http.errors``), ``X-Model-Version`` and metrics (``http.models``) as through Flask.

Everything else goes to Flask unchanged: other paths and methods, chunked bodies, a body over
the limit (Flask answers its 413), ``/endpoints/<name>/invocations``. A success is written
with the headers Flask writes, in its order; every other answer is the very Response that
the Flask view or error handler builds, so no path has a format of its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from http import HTTPStatus
from typing import IO, TYPE_CHECKING

from flask import Flask, Response

from smserve.custom_attributes import applied
from smserve.errors import ServingError
from smserve.http import errors, models, tfserving
from smserve.http.context import SERVICE_KEY, service_of
from smserve.http.sagemaker import CUSTOM_ATTRIBUTES_HEADER, empty_response
from smserve.metrics import Metrics
from smserve.repository.loading import ServedModel
from smserve.service import Reply

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

INVOCATIONS = "/invocations"
PING = "/ping"
TARGET_KEY = "HTTP_" + models.TARGET_HEADER.upper().replace("-", "_")
ATTRIBUTES_KEY = "HTTP_" + CUSTOM_ATTRIBUTES_HEADER.upper().replace("-", "_")


class BodyIncomplete(Exception):
    """The client sent less than its Content-Length, or reading the body failed."""


def install(app: Flask) -> None:
    """Put a FastPath in front of ``app``'s WSGI callable (after its extensions are set)."""
    app.wsgi_app = FastPath(app, app.wsgi_app)  # type: ignore[method-assign]


class FastPath:
    """The WSGI callable: answers the two requests above, hands the rest to ``flask``."""

    def __init__(self, app: Flask, flask: WSGIApplication) -> None:
        self.app = app
        self.flask = flask
        self.metrics: Metrics = app.extensions[tfserving.METRICS_KEY]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO"), environ.get("REQUEST_METHOD")
        if path == INVOCATIONS and method == "POST":
            size = self._body_size(environ)
            router = self.app.extensions.get(SERVICE_KEY)
            if size is not None and (router is None or isinstance(router, models.InvocationRouter)):
                return self._invocations(environ, start_response, size)
        elif path == PING and method == "GET":
            return self._ping()(environ, start_response)
        return self.flask(environ, start_response)

    def _body_size(self, environ: WSGIEnvironment) -> int | None:
        """The Content-Length when this path may read the body, else None (Flask's turn)."""
        length = environ.get("CONTENT_LENGTH")
        limit = self.app.config["MAX_CONTENT_LENGTH"]
        if not isinstance(length, str) or not (length.isascii() and length.isdigit()):
            return None
        if "HTTP_TRANSFER_ENCODING" in environ or limit is None or int(length) > limit:
            return None
        return int(length)

    def _ping(self) -> Response:
        try:
            service_of(self.app)
        except ServingError as exc:
            return errors.serving_error_response(exc, "GET", PING)
        return empty_response(HTTPStatus.OK)

    def _invocations(
        self, environ: WSGIEnvironment, start_response: StartResponse, size: int
    ) -> Iterable[bytes]:
        started = time.perf_counter()
        target: str | None = environ.get(TARGET_KEY)
        served: ServedModel | None = None
        try:
            body = read_exactly(environ["wsgi.input"], size)
            served = _router(self.app).target(target)
            reply = served.service.invoke(
                body,
                environ.get("CONTENT_TYPE"),
                environ.get("HTTP_ACCEPT"),
                environ.get(ATTRIBUTES_KEY),
            )
        except Exception as exc:  # each kind becomes the answer Flask gives it
            response = _error_response(exc)
        else:
            if reply is not None:
                models.count_invocation(self.metrics, served.name, HTTPStatus.OK, started)
                return _ok(reply, served, start_response)
            response = empty_response(HTTPStatus.NO_CONTENT)
        model = served.name if served is not None else target or ""
        models.finish_invocation(response, served, model, self.metrics, started)
        return response(environ, start_response)


def _router(app: Flask) -> models.InvocationRouter:
    router = service_of(app)  # raises ModelNotReady (503) while there is none, as through Flask
    assert isinstance(router, models.InvocationRouter)  # FastPath.__call__ checked
    return router


def _ok(reply: Reply, served: ServedModel, start_response: StartResponse) -> list[bytes]:
    """200 with the headers, and their order, of Flask's Response plus X-Model-Version."""
    headers = [("Content-Type", reply.media_type), ("Content-Length", str(len(reply.body)))]
    if reply.outputs is not None:
        headers.append((CUSTOM_ATTRIBUTES_HEADER, applied(reply.outputs)))
    headers.append((tfserving.VERSION_HEADER, str(served.version)))
    start_response("200 OK", headers)
    return [reply.body]


def _error_response(exc: Exception) -> Response:
    if isinstance(exc, ServingError):
        return errors.serving_error_response(exc, "POST", INVOCATIONS)
    if isinstance(exc, BodyIncomplete):  # Werkzeug's ClientDisconnected, as Flask answers it
        return errors.error_response(HTTPStatus.BAD_REQUEST, errors.DISCONNECTED_MESSAGE)
    return errors.unexpected_error_response(exc, "POST", INVOCATIONS)


def read_exactly(stream: IO[bytes], size: int) -> bytes:
    """``size`` bytes from ``stream``, in one read when the server allows (gunicorn does).

    Raises BodyIncomplete when the stream ends early or fails (OSError, ValueError), which
    is where Werkzeug raises ClientDisconnected."""
    chunks, missing = [], size
    try:
        while missing > 0:
            chunk = stream.read(missing)
            if not chunk:
                raise BodyIncomplete()
            chunks.append(chunk)
            missing -= len(chunk)
    except (OSError, ValueError) as exc:
        raise BodyIncomplete() from exc
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
