"""The teapot door: everything a door can declare, declared by a door that lives in tests/.

* routes: ``POST /brew`` (counted under the verb ``brew``), ``GET /brewing/ready`` (its health
  check, also answered by the supervisor behind nginx), ``GET /brewing/metrics`` (the page of
  its own metric names), and a prefix: every path under ``/teapot`` echoed back;
* a route with a variable, ``POST /teapot/<kind>/pour``, found before the prefix it lies under;
* its own error envelope ``{"fault"}``, an nginx location, an OpenAPI fragment;
* metric names: ``teapot_brews_total{model_name,status}`` (statuses ``brewed`` and
  ``spilled``) and the ``teapot_brew_microseconds`` histogram;
* reserved paths ``/brew`` and ``/teapot``, and a health path;
* a setting of its own: SMSERVE_TEAPOT_STRENGTH, which every brew reports."""

from __future__ import annotations

import re

from smserve.config import Declared, Reader
from smserve.doors import (
    DoorReply,
    DoorRequest,
    DoorSpec,
    Envelope,
    Handler,
    Mount,
    Prefix,
    Route,
    Setup,
)
from smserve.errors import ConfigError, InvalidInput
from smserve.media import JSON, TEXT
from smserve.metrics import ProtocolNames
from smserve.openapi import Fragment

ENVELOPE = Envelope("teapot", ("fault",))
HEALTH = "/brewing/ready"
PAGE = "/brewing/metrics"
NAMES = ProtocolNames(
    count="teapot_brews_total",
    latency="teapot_brew_microseconds",
    buckets=(100.0, 1_000.0, 10_000.0, 100_000.0),
    status=lambda status: "brewed" if status < 400 else "spilled",
)


def _strength(env: Reader) -> int:
    value = env.integer("SMSERVE_TEAPOT_STRENGTH", 3, minimum=1)
    if value > 9:
        raise ConfigError(f"SMSERVE_TEAPOT_STRENGTH={value} must be at most 9 spoons")
    return value


STRENGTH = Declared("SMSERVE_TEAPOT_STRENGTH", _strength, "`3`", "spoons of tea per pot (1 to 9)")


class TeapotDoor:
    """It answers under /teapot and at /brew, and refuses with its envelope."""

    def __init__(self, strength: int) -> None:
        self.strength = strength

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        return DoorReply(400, ENVELOPE.body(str(exc)), JSON, model="pot", verb="brew")

    def brew(self, request: DoorRequest) -> DoorReply:
        if not request.body:
            raise InvalidInput("send tea leaves")
        body = b"brewed %s x%d" % (request.body, self.strength)
        return DoorReply(200, body, TEXT, model="pot", verb="brew")

    def anything(self, request: DoorRequest) -> DoorReply:
        return DoorReply(200, f"{request.method} {request.path}".encode(), TEXT)

    def ready(self, request: DoorRequest) -> DoorReply:
        return DoorReply(200, b"", None)


def _page(setup: Setup) -> Handler:
    return lambda request: DoorReply(200, setup.metrics.render(NAMES).encode(), TEXT)


def _open(setup: Setup) -> Mount:
    door = TeapotDoor(STRENGTH.of(setup.settings))
    routes = (
        Route(("POST",), "/brew", "brew", door.brew),
        Route(("GET",), HEALTH, "teapot_ready", door.ready, counted=False),
        Route(("GET",), PAGE, "teapot_metrics", _page(setup), counted=False, waits=False),
        Route(("POST",), "/teapot/<kind>/pour", "pour", door.brew),
    )
    return Mount(door, routes, Prefix(re.compile(r"/teapot(?:/.*)?"), door.anything))


DOOR = DoorSpec(
    name="teapot",
    envelope=ENVELOPE,
    open=_open,
    nginx_locations=("/teapot",),
    openapi=lambda setup: Fragment({"/brew": {"post": {"operationId": "brew"}}}),
    metric_names=NAMES,
    reserved_paths=("/brew", "/teapot"),
    health_paths=(HEALTH,),
    settings=(STRENGTH,),
)
