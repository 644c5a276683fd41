"""``POST /invocations`` and ``GET /ping`` answered in front of Flask, byte for byte as Flask
would answer them.

An endpoint serves these two requests all day, and for a small batch Flask's per-request work
(request context, routing, hooks, Response objects) costs more than decoding, predicting and
encoding together. ``FastPath`` wraps the Flask app's ``wsgi_app`` and answers exactly:

* ``GET /ping``: the 200, or the 503 before the models are loaded;
* ``POST /invocations`` and V2's ``POST /v2/models/<name>[/versions/<v>]/infer`` with a
  Content-Length (no Transfer-Encoding) within the payload limit: the body is read in one
  call, then handed to the very door method the Flask route calls (``SageMakerAPI.invoke``,
  ``V2API.handle``), and counted the same way.

Everything else goes to Flask unchanged: other paths and methods, chunked bodies, a body over
the limit (Flask answers its 413), ``/endpoints/<name>/invocations``. A success is written
with the headers Flask writes, in its order; every other answer is the Response the Flask
adapter builds from the same DoorReply (``http.doors.to_response``), so no path has a format
of its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import replace
from http import HTTPStatus
from typing import IO, TYPE_CHECKING

from flask import Flask
from werkzeug.datastructures import EnvironHeaders

from smserve.doors import Door, DoorReply, DoorRequest
from smserve.errors import InvalidInput
from smserve.http import accounting, context
from smserve.http.doors import ROUTES_DOOR, VERSION_HEADER, Handler, raw_path_of, to_response
from smserve.http.draining import mark_unreadable

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

INVOCATIONS = "/invocations"
PING = "/ping"
V2_INFER = re.compile(r"/v2/models/[^/]+(?:/versions/[^/]+)?/infer")
_Target = tuple[Door, Handler, str, str]  # door, handler, route name, door name


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
        self.serving = context.serving_of(app)
        sagemaker, v2 = self.serving.sagemaker, self.serving.v2
        self._invocations: _Target = (sagemaker, sagemaker.invoke, "invocations", ROUTES_DOOR)
        self._v2_infer: _Target = (v2, v2.handle, "v2", "v2")

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO"), environ.get("REQUEST_METHOD")
        if method == "POST" and isinstance(path, str):
            target = self._target(path)
            size = self._body_size(environ) if target is not None else None
            if target is not None and size is not None:
                return self._post(environ, start_response, size, target)
        elif path == PING and method == "GET":
            return self._ping(environ, start_response)
        return self.flask(environ, start_response)

    def _target(self, path: str) -> _Target | None:
        """The door, handler and route name for a POST to ``path`` (None: Flask's turn)."""
        if path == INVOCATIONS:
            return self._invocations
        if V2_INFER.fullmatch(path) is not None:
            return self._v2_infer
        return None

    def _body_size(self, environ: WSGIEnvironment) -> int | None:
        """The Content-Length when this path may read the body, else None (Flask's turn)."""
        length = environ.get("CONTENT_LENGTH")
        limit = self.app.config["MAX_CONTENT_LENGTH"]
        if not isinstance(length, str) or not (length.isascii() and length.isdigit()):
            return None
        if "HTTP_TRANSFER_ENCODING" in environ or limit is None or int(length) > limit:
            return None
        return int(length)

    def _ping(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        door = self.serving.sagemaker
        request = DoorRequest("GET", PING, EnvironHeaders(environ), route="ping")
        try:
            context.check_ready(self.app)
            reply = door.ping(request)
        except Exception as exc:
            reply = door.error_reply(exc, request)
        return to_response(reply)(environ, start_response)

    def _post(
        self, environ: WSGIEnvironment, start_response: StartResponse, size: int, target: _Target
    ) -> Iterable[bytes]:
        metrics = self.serving.metrics
        started = time.perf_counter()
        metrics.begin()
        door, handler, route, door_name = target
        headers = EnvironHeaders(environ)
        request = DoorRequest("POST", raw_path_of(environ), headers, route=route)
        try:
            context.check_ready(self.app)
            request = replace(request, body=read_exactly(environ, size))
            reply = handler(request)
        except Exception as exc:  # each kind becomes the answer Flask gives it
            reply = door.error_reply(exc, request)
        accounting.finish(metrics, door_name, request, reply, started, environ)
        if reply.status == HTTPStatus.OK:
            return _ok(reply, start_response)
        return to_response(reply)(environ, start_response)


def _ok(reply: DoorReply, start_response: StartResponse) -> list[bytes]:
    """200 with the headers, and their order, of the Flask adapter's Response."""
    assert reply.content_type is not None
    headers = [("Content-Type", reply.content_type), ("Content-Length", str(len(reply.body)))]
    headers.extend(reply.headers)
    if reply.version is not None:
        headers.append((VERSION_HEADER, str(reply.version)))
    start_response("200 OK", headers)
    return [reply.body]


def read_exactly(environ: WSGIEnvironment, size: int) -> bytes:
    """``size`` bytes of the body, in one read when the server allows (gunicorn does).

    Raises InvalidInput, as reading through Flask does, when the stream ends early or fails
    (OSError, ValueError): where Werkzeug raises ClientDisconnected."""
    try:
        return _read(environ["wsgi.input"], size)
    except BodyIncomplete:
        mark_unreadable(environ)
        raise InvalidInput(context.DISCONNECTED_MESSAGE) from None


def _read(stream: IO[bytes], size: int) -> bytes:
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
