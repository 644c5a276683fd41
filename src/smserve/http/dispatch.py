"""The one request path: every request, from every door of ``smserve.door_table``, answered by
``Dispatcher``, the app's WSGI callable.

The dispatcher is built from the opened doors (``rules.Table``: exact paths, then patterns, in
the table's order, then prefixes) and the app's own pages. For a request it finds its target,
builds the DoorRequest (the raw path, the headers, the query, the route's variables), holds it
back with 503 while the models load (a route that ``waits``), reads the body of a POST, PUT or
PATCH (``request_body``: 413 over the payload limit, 400 when it cannot be read), calls the
handler, and counts the answer (``accounting.finish``) unless the route is not ``counted``.
Whatever the handler or the body raises is the door's own error reply
(``Door.error_reply``). A path no route or prefix takes is a 404 ``no such route``, one its
routes answer with other methods a 405 with ``Allow`` (OPTIONS: 200 with it), both in the
default door's envelope; and anything unexpected the default envelope's 500
(``failures.describe``: the traceback goes to the log only). Every answer is written by
``reply.write``."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from smserve.doors import EMPTY, Door, DoorReply, DoorRequest, Mount
from smserve.errors import ModelNotReady
from smserve.failures import Failure, describe
from smserve.http import accounting, context
from smserve.http.reply import failure_reply, write
from smserve.http.request_body import read_body
from smserve.http.rules import Found, Table, Target

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
NOT_READY_MESSAGE = "the model is not loaded yet; retry shortly"


class DefaultDoor:
    """The app's own pages' door: what they raise, in the default door's envelope."""

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        return failure_reply(describe(exc, f"{request.method} {request.path}"))


def table_of(doors: tuple[context.OpenDoor, ...], own: Mount) -> Table:
    """Every door's routes in the table's order, the app's own (``own``), then every door's
    prefix."""
    table = Table()
    for mount, name in (*((door.mount, door.spec.name) for door in doors), (own, "")):
        for route in mount.routes:
            target = Target(route.name, route.handler, mount.door, name, route.counted, route.waits)
            table.add(route.methods, route.rule, target)
    for door in doors:
        prefix = door.mount.prefix
        if prefix is not None:
            name = door.spec.name
            table.add_prefix(prefix.pattern, Target(name, prefix.handler, door.mount.door, name))
    return table


class Dispatcher:
    """The WSGI callable: ``table``'s targets, readiness from ``extensions`` (the app's),
    bodies within ``limit`` bytes, answers counted in ``serving``'s metrics."""

    def __init__(
        self, table: Table, serving: context.Serving, extensions: dict[str, Any], limit: int
    ) -> None:
        self.table = table
        self.metrics = serving.metrics
        self.extensions = extensions
        self.limit = limit

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        method: str = environ.get("REQUEST_METHOD", "GET")
        path = decoded_path(environ)
        try:
            found = self.table.find(method, path)
            if found is None:
                reply = self.unrouted(method, path)
            elif found.target.counted:
                reply = self._counted(environ, method, found)
            else:
                reply = self._reply(environ, method, found)[0]
        except Exception as exc:  # never a traceback in an answer
            reply = failure_reply(describe(exc, f"{method} {path}"))
        return write(reply, start_response, method)

    def unrouted(self, method: str, path: str) -> DoorReply:
        """404 for a path no route takes, 405 (OPTIONS: 200) for one with other methods."""
        allowed = self.table.allowed(path)
        if not allowed:
            return failure_reply(Failure(HTTPStatus.NOT_FOUND, f"no such route: {method} {path}"))
        allow = (("Allow", ", ".join(allowed)),)
        if method == "OPTIONS":
            return DoorReply(HTTPStatus.OK, b"", None, allow)
        message = f"{method} is not allowed on {path}; allowed: {allow[0][1]}"
        return failure_reply(Failure(HTTPStatus.METHOD_NOT_ALLOWED, message), allow)

    def _counted(self, environ: WSGIEnvironment, method: str, found: Found) -> DoorReply:
        metrics, started = self.metrics, time.perf_counter()
        metrics.begin()
        reply, request = self._reply(environ, method, found)
        accounting.finish(metrics, found.target.door_name, request, reply, started, environ)
        return reply

    def _reply(
        self, environ: WSGIEnvironment, method: str, found: Found
    ) -> tuple[DoorReply, DoorRequest]:
        """The target's reply (its door's error reply for what is raised), and the request."""
        target, body = found.target, b""
        try:
            if target.waits and self.extensions.get(context.MODELS_KEY) is None:
                raise ModelNotReady(NOT_READY_MESSAGE)
            if method in BODY_METHODS:
                body = read_body(environ, self.limit)
        except Exception as exc:
            request = door_request(environ, method, found)
            return target.door.error_reply(exc, request), request
        request = door_request(environ, method, found, body)
        return _handled(target.door, target, request), request


def _handled(door: Door, target: Target, request: DoorRequest) -> DoorReply:
    try:
        return target.handler(request)
    except Exception as exc:
        return door.error_reply(exc, request)


def door_request(
    environ: WSGIEnvironment, method: str, found: Found, body: bytes = b""
) -> DoorRequest:
    return DoorRequest(
        method,
        raw_path_of(environ),
        EnvironHeaders(environ),
        body,
        query_of(environ),
        found.target.name,
        found.params,
    )


def decoded_path(environ: WSGIEnvironment) -> str:
    """``PATH_INFO`` (percent-decoded, as latin-1) read as UTF-8, as routes match it."""
    path: str = environ.get("PATH_INFO") or "/"
    return path if path.isascii() else path.encode("latin-1").decode("utf-8", "replace")


def raw_path_of(environ: Mapping[str, Any]) -> str:
    """The path as the client sent it, still percent-encoded (TF Serving matches on it):
    gunicorn's RAW_URI, else REQUEST_URI, else PATH_INFO."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    return str(raw).partition("?")[0] if raw else str(environ.get("PATH_INFO", ""))


def query_of(environ: Mapping[str, Any]) -> Mapping[str, str]:
    """The query's parameters, percent-decoded; the first of a repeated one."""
    text = environ.get("QUERY_STRING")
    if not text:
        return EMPTY
    if not text.isascii():
        text = text.encode("latin-1").decode("utf-8", "replace")
    found: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True, errors="replace"):
        found.setdefault(name, value)
    return found


_KEYS: dict[str, str] = {}  # header name -> environ key, for the names asked for so far
_KEYS_KEPT = 256


class EnvironHeaders:
    """A request's headers, looked up case-insensitively in its WSGI environ."""

    __slots__ = ("environ",)

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self.environ = environ

    def get(self, name: str, /) -> str | None:
        key = _KEYS.get(name)
        if key is None:
            key = environ_key(name)
            if len(_KEYS) < _KEYS_KEPT:
                _KEYS[name] = key
        value = self.environ.get(key)
        return value if isinstance(value, str) else None


def environ_key(name: str) -> str:
    """``HTTP_X_AMZN_...`` for ``X-Amzn-...``; ``CONTENT_TYPE`` and ``CONTENT_LENGTH`` bare."""
    key = name.upper().replace("-", "_")
    return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"
