"""Which models an app serves, and which one answers each ``/invocations`` request.

``install`` builds the model source from the settings and wires it into the app:

* multi-model endpoint (SAGEMAKER_MULTI_MODEL): the registry of ``repository.mme``, the
  ``/models`` routes, and ``/invocations`` answered by the model named in
  ``X-Amzn-SageMaker-Target-Model`` (required);
* a TF Serving layout (SMSERVE_MODEL_CONFIG_FILE, or MODEL_NAME / MODEL_BASE_PATH): the
  versioned repository, loaded now and then polled; ``/invocations`` answers with the first
  configured model's newest version (or the model the target header names);
* otherwise the SageMaker model directory, as one model ``model`` with version 1, served by
  the very InferenceService ``/invocations`` uses, so both APIs give the same numbers.

In every mode ``/v1/...`` (``http.tfserving``) reads the same source, and every answer from
``/invocations`` carries ``X-Model-Version``. ``/invocations`` is counted in the metrics as
API ``invocations``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from flask import Flask, Response, g, request

from smserve.config import Settings
from smserve.errors import InvalidInput
from smserve.http import mme, tfserving
from smserve.metrics import Metrics
from smserve.repository import runtime
from smserve.repository.config import DEFAULT_MODEL_NAME, model_configs
from smserve.repository.loading import ModelLoader, ServedModel
from smserve.repository.mme import MultiModelRegistry
from smserve.repository.repository import FixedModel, Repository
from smserve.service import InferenceService, Reply
from smserve.tfserving.api import TFServingAPI
from smserve.tfserving.servable import build_servable
from smserve.tfserving.status import canonical_code

TARGET_HEADER = "X-Amzn-SageMaker-Target-Model"
INVOCATION_ENDPOINTS = frozenset({"sagemaker.invocations", "mme.invoke_model"})

Models = Repository | MultiModelRegistry


def uses_model_dir(settings: Settings) -> bool:
    """True when the app serves SM_MODEL_DIR (no multi-model, no TF Serving layout)."""
    layout = settings.model_config_file or settings.model_name or settings.model_base_path
    return not settings.multi_model and layout is None


def check(settings: Settings, build_service: Callable[[Settings], InferenceService]) -> None:
    """Fail at start-up (StartupError) rather than serve nothing: the SageMaker model must load
    and a TF Serving model list must be valid. Versions that fail later are END in status."""
    if uses_model_dir(settings):
        build_service(settings)
    elif not settings.multi_model:
        model_configs(settings)


class InvocationRouter:
    """Takes the InferenceService's place for ``/invocations``: picks the model per request."""

    def __init__(self, models: Models) -> None:
        self.models = models

    def target(self, name: str | None) -> ServedModel:
        if isinstance(self.models, MultiModelRegistry):
            if not name:
                raise InvalidInput(f"multi-model endpoint: name the model in {TARGET_HEADER}")
            return self.models.model(name)
        return self.models.served(name or self.models.default_model, None, None)

    def invoke(
        self,
        body: bytes,
        content_type: str | None,
        accept: str | None,
        attributes: str | None = None,
    ) -> Reply | None:
        served = self.target(request.headers.get(TARGET_HEADER))
        g.smserve_served = served
        return served.service.invoke(body, content_type, accept, attributes)


def install(
    app: Flask,
    settings: Settings,
    service: InferenceService | None,
    build_service: Callable[[Settings], InferenceService],
    loader: ModelLoader | None = None,
) -> InvocationRouter:
    """Build the models, register ``/v1``, ``/models`` and the metrics page; returns the
    router to install as the app's service. Raises StartupError as ``build_service`` does."""
    settings = runtime.prepare(settings)
    assert settings.runtime_dir is not None
    models = _models(settings, service, build_service, loader, settings.runtime_dir)
    metrics = Metrics(settings.runtime_dir / "metrics")
    tfserving.install(app, TFServingAPI(models), metrics)
    if isinstance(models, MultiModelRegistry):
        app.extensions[mme.REGISTRY_KEY] = models
        app.register_blueprint(mme.blueprint)
    app.before_request(_start_clock)
    app.after_request(_finish_invocation)
    return InvocationRouter(models)


def _models(
    settings: Settings,
    service: InferenceService | None,
    build_service: Callable[[Settings], InferenceService],
    loader: ModelLoader | None,
    run_dir: Path,
) -> Models:
    if uses_model_dir(settings):
        served_service = service if service is not None else build_service(settings)
        return Repository([FixedModel(_served(settings, served_service))])
    loader = loader or ModelLoader(settings)
    if settings.multi_model:
        return MultiModelRegistry(loader, run_dir / "mme")
    repository = Repository.from_configs(model_configs(settings), loader)
    repository.refresh()
    repository.start_polling(settings.poll_interval_s)
    return repository


def _served(settings: Settings, service: InferenceService) -> ServedModel:
    servable = build_servable(service.algorithm)
    return ServedModel(DEFAULT_MODEL_NAME, 1, servable, service, settings.model_dir)


def _start_clock() -> None:
    if request.endpoint in INVOCATION_ENDPOINTS:
        g.smserve_started = time.perf_counter()


def _finish_invocation(response: Response) -> Response:
    """Name the version that answered, and count the request."""
    started = g.get("smserve_started")
    if started is None:
        return response
    served: ServedModel | None = g.get("smserve_served")
    model = served.name if served is not None else _requested_model()
    return finish_invocation(response, served, model, tfserving.current_metrics(), started)


def finish_invocation(
    response: Response, served: ServedModel | None, model: str, metrics: Metrics, started: float
) -> Response:
    """Add X-Model-Version to a success and count the answer (also used by ``http.fastpath``)."""
    if served is not None and response.status_code < 300:
        response.headers[tfserving.VERSION_HEADER] = str(served.version)
    count_invocation(metrics, model, response.status_code, started)
    return response


def count_invocation(metrics: Metrics, model: str, status: int, started: float) -> None:
    """Count one answer; its latency (since ``started``, a perf_counter) only for a success."""
    latency_us = (time.perf_counter() - started) * 1e6 if status < 300 else None
    metrics.record(model, canonical_code(status), "invocations", latency_us)


def _requested_model() -> str:
    if request.endpoint == "mme.invoke_model":
        name: str = (request.view_args or {}).get("name", "")
        return name
    return request.headers.get(TARGET_HEADER, "")
