"""The Flask app factory: every door and its routes, in one place.

Three doors over one model repository (``repository.modes``) and one InferenceService per
model, so every door gives the same numbers:

* SageMaker hosting (``smserve.sagemaker``): ``/ping``, ``/invocations``,
  ``/endpoints/<name>/invocations``, ``/execution-parameters``, and on a multi-model endpoint
  the ``/models`` routes;
* TensorFlow Serving's REST API (``smserve.tfserving``): every path under ``/v1/``;
* the Open Inference Protocol, KServe V2 (``smserve.v2``): every path under ``/v2``;

plus the metrics pages, summed over every worker: the server's own at SMSERVE_METRICS_PATH
(behind nginx the supervisor answers that path, so a scrape never waits for a worker; this
route serves it with gunicorn alone) and TF Serving's names at its path; and ``GET
/openapi.json``: every route above described in OpenAPI 3.1, assembled from each door's own
description (its ``openapi`` module) and the codec registry's media types. ``POST
/invocations``, ``GET /ping`` and V2's ``POST .../infer`` are also answered in front of Flask,
by the same doors (``http.fastpath``)."""

from __future__ import annotations

import json
import os
import re

from flask import Flask, Response

import smserve
from smserve import metrics as metrics_module
from smserve import openapi
from smserve.budget import MemoryBudget
from smserve.codecs import default_registry
from smserve.config import Settings
from smserve.http import context, fastpath
from smserve.http.doors import Prefix, Route, mount
from smserve.http.errors import register_error_handlers
from smserve.media import JSON, PROMETHEUS_TEXT, TEXT
from smserve.metrics import Metrics, page, processes
from smserve.repository import runtime
from smserve.repository.loading import ModelLoader
from smserve.repository.mme import MultiModelRegistry
from smserve.repository.modes import Models, open_models
from smserve.sagemaker import openapi as sagemaker_openapi
from smserve.sagemaker.api import SageMakerAPI
from smserve.sagemaker.mme import MultiModelAPI
from smserve.service import InferenceService
from smserve.tfserving import openapi as tfserving_openapi
from smserve.tfserving.api import TFServingAPI
from smserve.tfserving.routes import API_PREFIX
from smserve.v2 import openapi as v2_openapi
from smserve.v2.api import V2API

V2_PREFIX = re.compile(r"/v2(?:/.*)?", re.DOTALL)
TFSERVING_KEY = "smserve.tfserving"


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
    sagemaker = SageMakerAPI(models, settings)
    budget = MemoryBudget.of(settings)  # each request's share, for the doors that parse
    tfserving = TFServingAPI(models, settings.max_payload_bytes, budget)
    v2 = V2API(models, settings.max_payload_bytes, budget)
    mount(app, _sagemaker_routes(sagemaker, models), _prefixes(tfserving, v2))
    app.add_url_rule(metrics_module.PATH, "metrics", lambda: _tfserving_page(metrics))
    app.add_url_rule(settings.metrics_path, "smserve_metrics", lambda: _page(metrics))
    document = _openapi_document(settings, models, service)
    app.add_url_rule(openapi.PATH, "openapi", lambda: Response(document, content_type=JSON))
    context.install(app, settings, models)
    app.extensions[context.DOORS_KEY] = context.Serving(sagemaker, v2, metrics)
    app.extensions[TFSERVING_KEY] = tfserving
    register_error_handlers(app)
    fastpath.install(app)
    return app


def _sagemaker_routes(api: SageMakerAPI, models: Models) -> tuple[Route, ...]:
    routes = (
        Route(("GET",), "/ping", "ping", api, api.ping),
        Route(("POST",), "/invocations", "invocations", api, api.invoke),
        Route(("POST",), "/endpoints/<name>/invocations", "endpoint_invocations", api, api.invoke),
        Route(
            ("GET",), "/execution-parameters", "execution_parameters", api, api.execution_parameters
        ),
    )
    if not isinstance(models, MultiModelRegistry):
        return routes
    mme = MultiModelAPI(models)
    return routes + (
        Route(("GET",), "/models", "list_models", api, mme.list_models),
        Route(("POST",), "/models", "load_model", api, mme.load_model),
        Route(("GET",), "/models/<model:name>", "describe_model", api, mme.describe_model),
        Route(("DELETE",), "/models/<model:name>", "unload_model", api, mme.unload_model),
        Route(("POST",), "/models/<path:name>/invoke", "invoke_model", api, mme.invoke_model),
    )


def _prefixes(tfserving: TFServingAPI, v2: V2API) -> tuple[Prefix, ...]:
    return (Prefix("tfserving", API_PREFIX, tfserving), Prefix("v2", V2_PREFIX, v2))


def _tfserving_page(metrics: Metrics) -> Response:
    """TF Serving's names, summed over every worker (see ``smserve.metrics``)."""
    return Response(metrics.render(), content_type=TEXT)


def _page(metrics: Metrics) -> Response:
    """The server's own page, as a worker sees the server: its master and the master's
    workers (with gunicorn alone; behind nginx the supervisor answers this path)."""
    master = os.getppid()
    roles = {"gunicorn_master": [master], "worker": processes.children(master)}
    return Response(page.render(metrics.all_counts(), roles), content_type=PROMETHEUS_TEXT)


def _openapi_document(
    settings: Settings, models: Models, service: InferenceService | None
) -> bytes:
    """Every route this app answers, from the doors' descriptions of themselves."""
    registry = service.registry if service is not None else default_registry(settings)
    multi_model = isinstance(models, MultiModelRegistry)
    fragments = (
        sagemaker_openapi.fragment(
            registry.decodable, registry.offers, multi_model=multi_model, lines=settings.batch_mode
        ),
        tfserving_openapi.fragment(),
        v2_openapi.fragment(),
        openapi.Fragment(
            {
                settings.metrics_path: openapi.text_page(
                    "metrics", "The server's metrics (Prometheus text 0.0.4)", PROMETHEUS_TEXT
                ),
                metrics_module.PATH: openapi.text_page(
                    "tfserving_metrics", "TF Serving's metrics (Prometheus text)", TEXT
                ),
            }
        ),
    )
    return json.dumps(openapi.assemble("smserve", smserve.__version__, fragments)).encode()
