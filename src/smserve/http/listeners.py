"""The servers a worker runs beside its HTTP one: the doors with a port of their own (today the
Open Inference Protocol over gRPC, ``smserve.v2grpc``).

Each starts in the worker once its models are loaded, from the app's models, so that the
gunicorn master, which forks, never holds their state; a listener that cannot start fails the
worker's boot, which stops the server (gunicorn's status 3). On SIGTERM the worker tells each
to stop taking requests while HTTP drains, then waits for their in-flight requests within the
graceful timeout (``http.worker``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smserve import v2grpc
from smserve.config import Settings
from smserve.doors import Listener
from smserve.http import context
from smserve.repository.modes import Models

Start = Callable[[Settings, Models], Listener | None]
STARTS: tuple[Start, ...] = (v2grpc.start,)


def start(settings: Settings, wsgi: Any) -> tuple[Listener, ...]:
    """Start every listener on the models of ``wsgi`` (a Flask app from ``create_app``);
    none for an app without models (a test's own factory)."""
    extensions = getattr(wsgi, "extensions", {})
    models = extensions.get(context.MODELS_KEY)
    if models is None:
        return ()
    started = (begin(settings, models) for begin in STARTS)
    return tuple(listener for listener in started if listener is not None)
