"""Every door mounted the same way: Flask's request becomes a DoorRequest, the door's
DoorReply becomes the response, and each reply is counted in the metrics.

Two kinds of mount: ``Route``, a URL rule answered by one handler of a door (the SageMaker
routes), and ``Prefix``, every path a pattern matches handed to one door that parses its own
routes (TF Serving matches ``/v1/`` case-insensitively and answers unknown paths under it
itself; V2 owns ``/v2``). Prefix doors answer in a ``before_request`` hook, so Flask's routing
404/405 never happens under their prefixes. Whatever a handler raises, or reading the body
raises, becomes the door's own error envelope (``Door.error_reply``). Each answer is counted
(``http.accounting``) under its door's name: ``sagemaker`` for the routes, the prefix's name
for a prefix door."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any, Protocol

from flask import Flask, Response, current_app, request
from werkzeug.routing import PathConverter

from smserve.doors import Door, DoorReply, DoorRequest
from smserve.http import accounting, context

Handler = Callable[[DoorRequest], DoorReply]
VERSION_HEADER = "X-Model-Version"
ROUTES_DOOR = "sagemaker"  # the door every Route belongs to, as the metrics name it
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class PrefixDoor(Door, Protocol):
    """A door that parses its own routes under its prefix."""

    def handle(self, request: DoorRequest) -> DoorReply: ...


@dataclass(frozen=True, slots=True)
class Route:
    """``methods`` on ``rule`` (Flask syntax), answered by ``door``'s ``handler``; ``name`` is
    the route's name in the DoorRequest (and Flask's endpoint)."""

    methods: tuple[str, ...]
    rule: str
    name: str
    door: Door
    handler: Handler


@dataclass(frozen=True, slots=True)
class Prefix:
    """Every path ``pattern`` fully matches, answered by ``door.handle``."""

    name: str
    pattern: re.Pattern[str]
    door: PrefixDoor


class ModelNameConverter(PathConverter):
    """``<model:name>``: a model name as sent, slashes included (so a name with one gets the
    400 stating the naming rule, not a 404), but never ending in ``/invoke``: that path is
    the invoke route's alone, and its Allow header must not list the name routes' methods."""

    regex = r"[^/].*?(?<!/invoke)"


def mount(app: Flask, routes: tuple[Route, ...], prefixes: tuple[Prefix, ...]) -> None:
    app.url_map.converters["model"] = ModelNameConverter
    for route in routes:
        app.add_url_rule(route.rule, route.name, _view(route), methods=list(route.methods))
    for prefix in prefixes:
        app.before_request(_hook(prefix))


def _view(route: Route) -> Callable[..., Response]:
    def view(**params: str) -> Response:
        return answer(route.door, route.handler, route.name, params, ROUTES_DOOR)

    return view


def _hook(prefix: Prefix) -> Callable[[], Response | None]:
    def hook() -> Response | None:
        if prefix.pattern.fullmatch(request.path) is None:
            return None
        return answer(prefix.door, prefix.door.handle, prefix.name, {}, prefix.name)

    return hook


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
