"""The front doors the server opens, in order: the one place that names them.

The Flask app mounts each door's routes in this order (so an earlier door's routes and
prefixes win), the fast path answers their fast routes, nginx gets a location for every door
that declares one, the worker starts every listener, and ``/openapi.json`` joins their
fragments. The first door is the default one: its envelope answers whatever no door owns (an
unrouted path, a request that cannot be parsed). A new door is a package exporting a
``DoorSpec`` and one line here."""

from __future__ import annotations

from smserve.doors import DoorSpec, Envelope
from smserve.sagemaker import door as sagemaker
from smserve.tfserving import door as tfserving
from smserve.v2 import door as v2
from smserve.v2grpc import door as v2grpc

DOORS: tuple[DoorSpec, ...] = (
    sagemaker.DOOR,
    tfserving.DOOR,
    v2.DOOR,
    v2grpc.DOOR,
)
DEFAULT = DOORS[0]


def default_envelope() -> Envelope:
    """The default door's envelope: every error no door owns is written in it."""
    assert DEFAULT.envelope is not None, "the default door speaks HTTP"
    return DEFAULT.envelope
