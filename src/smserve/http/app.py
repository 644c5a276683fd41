"""The Flask app factory: every door of ``smserve.door_table``, mounted in its order.

The doors share one model repository (``repository.modes``) and one InferenceService per
model, so every door gives the same numbers. Each door describes itself (``doors.DoorSpec``):
its routes and prefixes are mounted here (``http.doors``), its fast routes are answered in
front of Flask (``http.fastpath``), and its OpenAPI fragment joins ``GET /openapi.json`` (every
route described in OpenAPI 3.1). The app adds what belongs to no door: the server's own
metrics page at SMSERVE_METRICS_PATH, summed over every worker (behind nginx the supervisor
answers that path, so a scrape never waits for a worker; this route serves it with gunicorn
alone), and the OpenAPI document."""

from __future__ import annotations

import json
import os

from flask import Flask, Response

import smserve
from smserve import door_table, openapi
from smserve.budget import MemoryBudget
from smserve.codecs import CodecRegistry, default_registry
from smserve.config import Settings
from smserve.doors import Setup
from smserve.http import context, fastpath
from smserve.http.doors import mount
from smserve.http.errors import register_error_handlers
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
    # Bodies over the limit are refused with 413, chunked ones included.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_payload_bytes
    metrics = Metrics(settings.runtime_dir / "metrics")
    models = open_models(settings, service, ModelLoader(settings, observer=metrics))
    metrics.models_loaded = lambda: len(models.names())
    # each request's share of memory, for the doors that parse
    setup = Setup(
        settings, models, MemoryBudget.of(settings), _registry(settings, service), metrics
    )
    doors = open_doors(setup)
    mount(app, doors)
    app.add_url_rule(settings.metrics_path, "smserve_metrics", lambda: _page(metrics))
    document = _openapi_document(setup)
    app.add_url_rule(openapi.PATH, "openapi", lambda: Response(document, content_type=JSON))
    context.install(app, settings, models)
    app.extensions[context.DOORS_KEY] = context.Serving(doors, metrics)
    register_error_handlers(app)
    fastpath.install(app)
    return app


def open_doors(setup: Setup) -> tuple[context.OpenDoor, ...]:
    """Every door of the table with HTTP routes, opened over ``setup``'s models."""
    return tuple(
        context.OpenDoor(spec, spec.open(setup))
        for spec in door_table.DOORS
        if spec.open is not None
    )


def _registry(settings: Settings, service: InferenceService | None) -> CodecRegistry:
    return service.registry if service is not None else default_registry(settings)


def _page(metrics: Metrics) -> Response:
    """The server's own page, as a worker sees the server: its master and the master's
    workers (with gunicorn alone; behind nginx the supervisor answers this path)."""
    master = os.getppid()
    roles = {"gunicorn_master": [master], "worker": processes.children(master)}
    return Response(page.render(metrics.all_counts(), roles), content_type=PROMETHEUS_TEXT)


def _openapi_document(setup: Setup) -> bytes:
    """Every route this app answers, from the doors' descriptions of themselves."""
    fragments = [spec.openapi(setup) for spec in door_table.DOORS if spec.openapi is not None]
    own = openapi.text_page(
        "metrics", "The server's metrics (Prometheus text 0.0.4)", PROMETHEUS_TEXT
    )
    fragments.append(openapi.Fragment({setup.settings.metrics_path: own}))
    return json.dumps(openapi.assemble("smserve", smserve.__version__, fragments)).encode()
