"""The servers a worker runs beside its HTTP one: the doors of ``smserve.door_table`` with a
port of their own (a ``DoorSpec.listener``: the Open Inference Protocol over gRPC).

Each starts in the worker once its models are loaded, from the app's models, so that the
gunicorn master, which forks, never holds their state; a listener that cannot start fails the
worker's boot, which stops the server (gunicorn's status 3). On SIGTERM the worker tells each
to stop taking requests while HTTP drains, then waits for their in-flight requests within the
graceful timeout (``http.worker``)."""

from __future__ import annotations

from typing import Any

from smserve import door_table
from smserve.config import Settings
from smserve.doors import Listener, Start
from smserve.http import context


def starts() -> tuple[Start, ...]:
    """Every door's listener, in the table's order."""
    return tuple(door.listener for door in door_table.DOORS if door.listener is not None)


def start(settings: Settings, wsgi: Any) -> tuple[Listener, ...]:
    """Start every listener on the models of ``wsgi`` (a Flask app from ``create_app``),
    counting in its metrics; none for an app without models (a test's own factory)."""
    extensions = getattr(wsgi, "extensions", {})
    models = extensions.get(context.MODELS_KEY)
    if models is None:
        return ()
    serving = extensions.get(context.DOORS_KEY)
    metrics = serving.metrics if isinstance(serving, context.Serving) else None
    started = (begin(settings, models, metrics) for begin in starts())
    return tuple(listener for listener in started if listener is not None)
