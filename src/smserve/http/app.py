"""The app factory: every door of ``smserve.door_table``, opened in its order, answered by one
dispatcher (``http.dispatch``).

The doors share one model repository (``repository.modes``) and one InferenceService per
model, so every door gives the same numbers. Each door describes itself (``doors.DoorSpec``):
its routes and prefix go into the dispatcher's table, and its OpenAPI fragment joins ``GET
/openapi.json`` (every route described in OpenAPI 3.1). The app adds what belongs to no door,
as uncounted routes of its own: the server's own metrics page at SMSERVE_METRICS_PATH, summed
over every worker (behind nginx the supervisor answers that path, so a scrape never waits for a
worker; this route serves it with gunicorn alone), and the OpenAPI document.

Flask is the application object and nothing more: what gunicorn loads, what tests drive
(``app.test_client()``), where the worker's state lives (``app.extensions``: the models the
gRPC listener serves). Its ``wsgi_app`` is the dispatcher, so no request meets Flask's routing,
request context, hooks or Response objects."""

from __future__ import annotations

import json
import os

from flask import Flask

import smserve
from smserve import door_table, openapi
from smserve.budget import MemoryBudget
from smserve.codecs import CodecRegistry, default_registry
from smserve.config import Settings
from smserve.doors import DoorReply, DoorRequest, Handler, Mount, Route, Setup
from smserve.http import context, dispatch
from smserve.media import JSON, PROMETHEUS_TEXT
from smserve.metrics import Metrics, page, processes
from smserve.repository import runtime
from smserve.repository.loading import ModelLoader
from smserve.repository.modes import open_models
from smserve.service import InferenceService


def create_app(settings: Settings, service: InferenceService | None = None) -> Flask:
    """The WSGI app. Loads the models unless ``service`` (SM_MODEL_DIR's) is given, as tests
    do; raises StartupError when they cannot be loaded."""
    settings = runtime.prepare(settings)
    assert settings.runtime_dir is not None
    app = Flask(__name__, static_folder=None)
    metrics = Metrics(settings.runtime_dir / "metrics")
    models = open_models(settings, service, ModelLoader(settings, observer=metrics))
    metrics.models_loaded = lambda: len(models.names())
    # each request's share of memory, for the doors that parse
    setup = Setup(
        settings, models, MemoryBudget.of(settings), _registry(settings, service), metrics
    )
    doors = open_doors(setup)
    context.install(app, settings, models)
    serving = context.Serving(doors, metrics)
    app.extensions[context.DOORS_KEY] = serving
    table = dispatch.table_of(doors, _own_pages(setup))
    limit = settings.max_payload_bytes
    app.wsgi_app = dispatch.Dispatcher(table, serving, app.extensions, limit)  # type: ignore[method-assign]
    return app


def dispatcher_of(app: Flask) -> dispatch.Dispatcher:
    """The dispatcher that answers every request of ``app`` (from ``create_app``)."""
    dispatcher = app.wsgi_app
    assert isinstance(dispatcher, dispatch.Dispatcher)
    return dispatcher


def open_doors(setup: Setup) -> tuple[context.OpenDoor, ...]:
    """Every door of the table with HTTP routes, opened over ``setup``'s models."""
    return tuple(
        context.OpenDoor(spec, spec.open(setup))
        for spec in door_table.DOORS
        if spec.open is not None
    )


def _registry(settings: Settings, service: InferenceService | None) -> CodecRegistry:
    return service.registry if service is not None else default_registry(settings)


def _own_pages(setup: Setup) -> Mount:
    """The metrics page and the OpenAPI document: neither counted nor held back."""
    document = _openapi_document(setup)
    pages = (
        (setup.settings.metrics_path, "smserve_metrics", _page(setup.metrics)),
        (openapi.PATH, "openapi", lambda request: DoorReply(200, document, JSON)),
    )
    routes = (Route(("GET",), path, name, page, False, False) for path, name, page in pages)
    return Mount(dispatch.DefaultDoor(), tuple(routes))


def _page(metrics: Metrics) -> Handler:
    def render(request: DoorRequest) -> DoorReply:
        """The server's own page, as a worker sees the server: its master and the master's
        workers (with gunicorn alone; behind nginx the supervisor answers this path)."""
        master = os.getppid()
        roles = {"gunicorn_master": [master], "worker": processes.children(master)}
        return DoorReply(200, page.render(metrics.all_counts(), roles).encode(), PROMETHEUS_TEXT)

    return render


def _openapi_document(setup: Setup) -> bytes:
    """Every route this app answers, from the doors' descriptions of themselves."""
    fragments = [spec.openapi(setup) for spec in door_table.DOORS if spec.openapi is not None]
    own = openapi.text_page(
        "metrics", "The server's metrics (Prometheus text 0.0.4)", PROMETHEUS_TEXT
    )
    fragments.append(openapi.Fragment({setup.settings.metrics_path: own}))
    return json.dumps(openapi.assemble("smserve", smserve.__version__, fragments)).encode()
