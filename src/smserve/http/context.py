"""What the HTTP layer keeps on the app object: the settings, the opened doors, the metrics,
and whether this worker is ready.

Readiness is what ``/ping`` reports: a worker's app answers once its models exist and 503
(ModelNotReady, in the door's own envelope) before, on every route that ``waits``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from smserve.config import Settings
from smserve.doors import DoorSpec, Mount
from smserve.metrics import Metrics
from smserve.repository.modes import Models

SETTINGS_KEY = "smserve.settings"
MODELS_KEY = "smserve.models"
DOORS_KEY = "smserve.doors"


class Extended(Protocol):
    """The app object (Flask's), as far as this layer uses it: its ``extensions``."""

    extensions: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OpenDoor:
    """A door of the table (``spec``) opened over this app's models (``mount``)."""

    spec: DoorSpec
    mount: Mount


@dataclass(frozen=True, slots=True)
class Serving:
    """What every request of this app shares: the doors, opened in the table's order, and
    the metrics."""

    doors: tuple[OpenDoor, ...]
    metrics: Metrics


def install(app: Extended, settings: Settings, models: Models | None) -> None:
    """Attach ``settings`` and ``models`` (None: not ready yet) to ``app``."""
    app.extensions[SETTINGS_KEY] = settings
    app.extensions[MODELS_KEY] = models


def serving_of(app: Extended) -> Serving:
    serving: Serving = app.extensions[DOORS_KEY]
    return serving
