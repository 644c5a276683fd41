"""The doors' fast routes (each door's ``FastRoute``s: the requests it answers all day, such as
``POST /invocations``) answered in front of Flask, byte for byte as Flask would answer them.

An endpoint serves these requests all day, and for a small batch Flask's per-request work
(request context, routing, hooks, Response objects) costs more than decoding, predicting and
encoding together. ``FastPath`` wraps the Flask app's ``wsgi_app`` and answers a fast route
exactly: one without a body at once (``/ping``: the 200, or the 503 before the models are
loaded); one with a body only with a Content-Length (no Transfer-Encoding) within the payload
limit, read in one call, then handed to the very door method the Flask route calls, and
counted the same way (unless the route is not ``counted``).

Everything else goes to Flask unchanged: other paths and methods, chunked bodies, a body over
the limit (Flask answers its 413). A success is written with the headers Flask writes, in its
order; every other answer is the Response the Flask adapter builds from the same DoorReply
(``http.doors.to_response``), so no path has a format of its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import IO, TYPE_CHECKING, Any

from flask import Flask
from werkzeug.datastructures import EnvironHeaders

from smserve.doors import Door, DoorReply, DoorRequest, FastRoute
from smserve.errors import InvalidInput
from smserve.http import accounting, context
from smserve.http.doors import VERSION_HEADER, raw_path_of, to_response
from smserve.http.draining import mark_unreadable

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True, slots=True)
class Target:
    """A fast route with the door that answers its errors and the door's metrics name."""

    route: FastRoute
    door: Door
    door_name: str


class BodyIncomplete(Exception):
    """The client sent less than its Content-Length, or reading the body failed."""


def install(app: Flask) -> None:
    """Put a FastPath in front of ``app``'s WSGI callable (after its extensions are set)."""
    app.wsgi_app = FastPath(app, app.wsgi_app)  # type: ignore[method-assign]


def targets(serving: context.Serving) -> list[Target]:
    """Every door's fast routes, in the table's order."""
    return [
        Target(route, door.mount.door, door.spec.name)
        for door in serving.doors
        for route in door.mount.fast
    ]


class FastPath:
    """The WSGI callable: answers the fast routes, hands the rest to ``flask``."""

    def __init__(self, app: Flask, flask: WSGIApplication) -> None:
        self.app = app
        self.flask = flask
        self.serving = context.serving_of(app)
        # Exact paths by (method, path), looked up in one step; patterns tried in order.
        self._exact: dict[tuple[str, str], Target] = {}
        self._patterns: list[tuple[str, re.Pattern[str], Target]] = []
        for target in targets(self.serving):
            method, path = target.route.method, target.route.path
            if isinstance(path, str):
                self._exact[method, path] = target
            else:
                self._patterns.append((method, path, target))

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO"), environ.get("REQUEST_METHOD")
        target = self._target(method, path)
        if target is None:
            return self.flask(environ, start_response)
        if method not in _BODY_METHODS:
            return self._answer(environ, start_response, target, None)
        size = self._body_size(environ)
        if size is None:
            return self.flask(environ, start_response)
        return self._answer(environ, start_response, target, size)

    def _target(self, method: Any, path: Any) -> Target | None:
        """The fast route ``method`` on ``path`` takes (None: Flask's turn)."""
        target = self._exact.get((method, path))
        if target is not None or not isinstance(path, str):
            return target
        for allowed, pattern, candidate in self._patterns:
            if method == allowed and pattern.fullmatch(path) is not None:
                return candidate
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

    def _answer(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        target: Target,
        size: int | None,
    ) -> Iterable[bytes]:
        metrics = self.serving.metrics
        started = time.perf_counter()
        counted = target.route.counted
        if counted:
            metrics.begin()
        reply, request = self._reply(environ, target, size)
        if counted:
            accounting.finish(metrics, target.door_name, request, reply, started, environ)
        if reply.status == HTTPStatus.OK and reply.content_type is not None:
            return _ok(reply, start_response)
        return to_response(reply)(environ, start_response)

    def _reply(
        self, environ: WSGIEnvironment, target: Target, size: int | None
    ) -> tuple[DoorReply, DoorRequest]:
        """The door's reply (its error reply for whatever is raised), and the request."""
        route = target.route
        headers = EnvironHeaders(environ)
        request = DoorRequest(route.method, raw_path_of(environ), headers, route=route.name)
        try:
            context.check_ready(self.app)
            if size is not None:
                request = replace(request, body=read_exactly(environ, size))
            return route.handler(request), request
        except Exception as exc:  # each kind becomes the answer Flask gives it
            return target.door.error_reply(exc, request), request


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
