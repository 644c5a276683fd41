"""The front doors the server opens, in order: the one place that names them.

The dispatcher looks each door's routes up in this order (so an earlier door's routes win;
every route before any prefix), nginx gets a location for every door
that declares one, the worker starts every listener, ``/openapi.json`` joins their
fragments, and no setting may take a path a door reserves (``check_settings``). The first
door is the default one: its envelope answers whatever no door owns (an unrouted path, a
request that cannot be parsed). A new door is a package exporting a ``DoorSpec`` and one
line here."""

from __future__ import annotations

from smserve.config import Settings
from smserve.doors import DoorSpec, Envelope
from smserve.errors import ConfigError
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


def reserved_paths() -> tuple[str, ...]:
    """The path prefixes the doors answer, in table order."""
    return tuple(path for door in DOORS for path in door.reserved_paths)


def check_settings(settings: Settings) -> None:
    """Refuse (ConfigError) settings that take a door's path: the metrics page's."""
    path = settings.metrics_path
    taken = next((p for p in reserved_paths() if path.startswith(p.rstrip("/"))), None)
    if taken is not None:
        raise ConfigError(
            f"SMSERVE_METRICS_PATH={path!r} is a path the server already answers ({taken})"
        )
