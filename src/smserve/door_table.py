"""The front doors the server opens, in order: the one place that names them.

The dispatcher looks each door's routes up in this order (so an earlier door's routes win;
every route before any prefix), nginx gets a location for every door that declares one and
hands every door's health paths to the supervisor (which answers them), the worker starts every
listener, ``/openapi.json`` joins their fragments, the metrics count every door's API requests
in the names of each door that declares some, the settings reader and reference take each
door's own settings, and no setting may take a path the server or a door reserves
(``check_settings``). The first door is the default one: its envelope answers whatever no door
owns (an unrouted path, a request that cannot be parsed). A new door is a package exporting a
``DoorSpec`` and one line here.

Everything below reads ``DOORS`` when called, never at import, so a table a test supplies is
the one served."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smserve import openapi
from smserve.config import SERVER_PREFIX, Declared, Settings
from smserve.doors import DoorSpec, Envelope
from smserve.errors import ConfigError
from smserve.metrics import ProtocolNames
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
# The paths the server answers itself, beside its doors': nginx's error pages and the
# supervisor's probe (under SERVER_PREFIX), and the OpenAPI document.
SERVER_PATHS = (SERVER_PREFIX, openapi.PATH)


def default_envelope() -> Envelope:
    """The default door's envelope: every error no door owns is written in it."""
    assert DEFAULT.envelope is not None, "the default door speaks HTTP"
    return DEFAULT.envelope


def reserved_paths() -> tuple[str, ...]:
    """The paths no setting may take (the prefixes of what they answer): the server's own,
    then every door's reserved and health paths, in table order."""
    doors = (path for door in DOORS for path in (*door.reserved_paths, *door.health_paths))
    return (*SERVER_PATHS, *doors)


def check_settings(settings: Settings) -> None:
    """Refuse (ConfigError) settings that take a path the server answers: the metrics page's."""
    path = settings.metrics_path
    taken = next((p for p in reserved_paths() if path.startswith(p.rstrip("/"))), None)
    if taken is not None:
        raise ConfigError(
            f"SMSERVE_METRICS_PATH={path!r} is a path the server already answers ({taken})"
        )


def health_paths() -> dict[str, Envelope]:
    """Every door's health paths, each with the envelope its 503 is written in."""
    return {
        path: door.envelope or default_envelope() for door in DOORS for path in door.health_paths
    }


def metric_names() -> tuple[ProtocolNames, ...]:
    """The protocols' names every door's API requests are also counted in, in table order."""
    return tuple(door.metric_names for door in DOORS if door.metric_names is not None)


def declared_settings() -> tuple[Declared[Any], ...]:
    """Every door's own settings, in table order."""
    return tuple(setting for door in DOORS for setting in door.settings)


def read_settings(settings: Settings, environ: Mapping[str, str]) -> Settings:
    """``settings`` with every door's own settings read from ``environ``, checked as a whole
    (ConfigError names what is wrong)."""
    served = settings.read_declared(environ, declared_settings())
    check_settings(served)
    return served


def settings_reference() -> str:
    """The settings reference's table of the doors' own settings (docs/settings.md)."""
    rows = [setting.row() for setting in declared_settings()]
    return "\n".join(["| variable | default | meaning |", "|---|---|---|", *rows]) + "\n"
