"""Every door mounted the same way: Flask's request becomes a DoorRequest, the door's
DoorReply becomes the response, and each reply is counted in the metrics.

Two kinds of mount (``smserve.doors.Mount``): a door's ``Route``s, URL rules each answered by
one handler, and its ``prefix``: every path the pattern fully matches handed to one handler
that parses its own routes (and answers unknown paths under it itself). Prefix doors answer in
a ``before_request`` hook, so Flask's routing 404/405 never happens under their prefixes.
Whatever a handler raises, or reading the body raises, becomes the door's own error envelope
(``Door.error_reply``). Each answer is counted (``http.accounting``) under its door's name;
a route that is not ``counted`` (a page about the server) is neither counted nor held back
while the models load."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app, request
from werkzeug.routing import PathConverter

from smserve.doors import Door, DoorReply, DoorRequest, Handler, Route
from smserve.http import accounting, context

VERSION_HEADER = "X-Model-Version"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class ModelNameConverter(PathConverter):
    """``<model:name>``: a model name as sent, slashes included (so a name with one gets the
    400 stating the naming rule, not a 404), but never ending in ``/invoke``: that path is
    the invoke route's alone, and its Allow header must not list the name routes' methods."""

    regex = r"[^/].*?(?<!/invoke)"


def mount(app: Flask, doors: tuple[context.OpenDoor, ...]) -> None:
    """Every door's routes, then every door's prefix, in the table's order."""
    app.url_map.converters["model"] = ModelNameConverter
    for door in doors:
        for route in door.mount.routes:
            view = _view(door, route)
            app.add_url_rule(route.rule, route.name, view, methods=list(route.methods))
    for door in doors:
        if door.mount.prefix is not None:
            app.before_request(_hook(door))


def _view(door: context.OpenDoor, route: Route) -> Callable[..., Response]:
    name, api = door.spec.name, door.mount.door
    if not route.counted:
        return lambda **params: _uncounted(route, params)

    def view(**params: str) -> Response:
        return answer(api, route.handler, route.name, params, name)

    return view


def _hook(door: context.OpenDoor) -> Callable[[], Response | None]:
    name, api, prefix = door.spec.name, door.mount.door, door.mount.prefix
    assert prefix is not None
    pattern, handler = prefix.pattern, prefix.handler

    def hook() -> Response | None:
        if pattern.fullmatch(request.path) is None:
            return None
        return answer(api, handler, name, {}, name)

    return hook


def _uncounted(route: Route, params: Mapping[str, str]) -> Response:
    """A page about the server: what it raises goes to the app's error handlers."""
    door_request = DoorRequest(
        request.method,
        raw_path(),
        request.headers,
        query=request.args,
        route=route.name,
        params=params,
    )
    return to_response(route.handler(door_request))


def answer(
    door: Door, handler: Handler, route: str, params: Mapping[str, str], door_name: str
) -> Response:
    """The response to this request from ``handler``, counted in the metrics."""
    metrics = context.current_serving().metrics
    started = time.perf_counter()
    metrics.begin()
    door_request = DoorRequest(
        request.method, raw_path(), request.headers, query=request.args, route=route, params=params
    )
    try:
        context.check_ready(current_app)
        if request.method in _BODY_METHODS:
            door_request = replace(door_request, body=context.read_body())
        reply = handler(door_request)
    except Exception as exc:
        reply = door.error_reply(exc, door_request)
    accounting.finish(metrics, door_name, door_request, reply, started, request.environ)
    return to_response(reply)


def raw_path() -> str:
    """The path as the client sent it, still percent-encoded (TF Serving matches on it)."""
    return raw_path_of(request.environ)


def raw_path_of(environ: Mapping[str, Any]) -> str:
    """``raw_path`` from a WSGI environment (gunicorn's RAW_URI, else REQUEST_URI)."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    return str(raw).partition("?")[0] if raw else str(environ.get("PATH_INFO", ""))


def to_response(reply: DoorReply) -> Response:
    """The reply as a Flask Response, plus X-Model-Version on a success."""
    response = Response(reply.body, status=reply.status, content_type=reply.content_type)
    if reply.content_type is None:
        del response.headers["Content-Type"]
    for name, value in reply.headers:
        response.headers[name] = value
    if reply.version is not None and reply.status < HTTPStatus.MULTIPLE_CHOICES:
        response.headers[VERSION_HEADER] = str(reply.version)
    return response
