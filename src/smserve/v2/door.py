"""The Open Inference Protocol's REST door as the server sees it: ``/v2`` and every path under
it handed to ``V2API``, errors as ``{"error"}``. ``POST .../infer`` is also answered in front
of Flask (``http.fastpath``): it is the protocol's hot path."""

from __future__ import annotations

import re

from smserve.doors import DoorSpec, Envelope, FastRoute, Mount, Prefix, Setup
from smserve.openapi import Fragment
from smserve.v2 import openapi
from smserve.v2.api import V2API

ENVELOPE = Envelope("plain", ("error",))
PREFIX = re.compile(r"/v2(?:/.*)?", re.DOTALL)
INFER = re.compile(r"/v2/models/[^/]+(?:/versions/[^/]+)?/infer")


def open_door(setup: Setup) -> Mount:
    api = V2API(setup.models, setup.settings.max_payload_bytes, setup.budget)
    fast = (FastRoute("POST", INFER, "v2", api.handle),)
    return Mount(api, prefix=Prefix(PREFIX, api.handle), fast=fast)


def fragment(setup: Setup) -> Fragment:
    return openapi.fragment()


DOOR = DoorSpec(
    name="v2",
    envelope=ENVELOPE,
    open=open_door,
    nginx_locations=("/v2",),
    openapi=fragment,
    reserved_paths=("/v2",),
)
