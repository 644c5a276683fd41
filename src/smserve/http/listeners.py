"""The servers a worker runs beside its HTTP one: the doors of ``smserve.door_table`` with a
port of their own (a ``DoorSpec.listener``: the Open Inference Protocol over gRPC).

Each starts in the worker once its models are loaded, from the app's models, so that the
gunicorn master, which forks, never holds their state; a listener that cannot start fails the
worker's boot, which stops the server (gunicorn's status 3). On SIGTERM the worker tells each
to stop taking requests while HTTP drains, then waits for their in-flight requests within the
graceful timeout (``http.worker``)."""

from __future__ import annotations

import time
from typing import Any

from smserve import door_table
from smserve.config import Settings
from smserve.doors import Listener, Start
from smserve.http import context


def starts() -> tuple[Start, ...]:
    """Every door's listener, in the table's order."""
    return tuple(door.listener for door in door_table.DOORS if door.listener is not None)


def start(settings: Settings, wsgi: Any) -> tuple[Listener, ...]:
    """Start every listener on the models of ``wsgi`` (the app from ``create_app``),
    counting in its metrics; none for an app without models (a test's own factory)."""
    extensions = getattr(wsgi, "extensions", {})
    models = extensions.get(context.MODELS_KEY)
    if models is None:
        return ()
    serving = extensions.get(context.DOORS_KEY)
    metrics = serving.metrics if isinstance(serving, context.Serving) else None
    started = (begin(settings, models, metrics) for begin in starts())
    return tuple(listener for listener in started if listener is not None)


class Stopping:
    """A worker's listeners stopped with it (both worker classes): told to stop taking requests
    when HTTP starts draining (SIGTERM), then waited for within the graceful timeout from then."""

    def __init__(self) -> None:
        self.began: float | None = None

    def begin(self, started: tuple[Listener, ...]) -> None:
        if self.began is None:
            self.began = time.monotonic()
            for listener in started:
                listener.begin_stop()

    def wait(self, started: tuple[Listener, ...], graceful_timeout: float, log: Any) -> None:
        """Also when the worker ends for another reason than a stop."""
        self.begin(started)
        deadline = (self.began or 0.0) + graceful_timeout
        for listener in started:
            if not listener.wait_stopped(max(deadline - time.monotonic(), 0.0)):
                log.warning("a listener still had requests after the graceful timeout")
