"""The Open Inference Protocol's REST door as the server sees it: ``/v2`` and every path under
it handed to ``V2API``, which parses its own routes (``v2.routes``: Triton's 404 and 405),
errors as ``{"error"}``."""

from __future__ import annotations

import re

from smserve.doors import DoorSpec, Envelope, Mount, Prefix, Setup
from smserve.openapi import Fragment
from smserve.v2 import openapi
from smserve.v2.api import V2API

ENVELOPE = Envelope("plain", ("error",))
PREFIX = re.compile(r"/v2(?:/.*)?", re.DOTALL)


def open_door(setup: Setup) -> Mount:
    api = V2API(setup.models, setup.settings.max_payload_bytes, setup.budget)
    return Mount(api, prefix=Prefix(PREFIX, api.handle))


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
