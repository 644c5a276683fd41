"""The Flask app factory, and the one place a serving process builds its InferenceService."""

from __future__ import annotations

from flask import Flask

from smserve.algorithms import load_algorithm
from smserve.codecs import default_registry
from smserve.config import Settings
from smserve.http import context, fastpath, models, sagemaker
from smserve.http.errors import register_error_handlers
from smserve.service import InferenceService


def build_service(settings: Settings) -> InferenceService:
    """Load the model and the codecs; raises ModelLoadError or ConfigError (StartupError)."""
    return InferenceService(load_algorithm(settings), default_registry(settings), settings)


def create_app(settings: Settings, service: InferenceService | None = None) -> Flask:
    """The WSGI app. Builds the service (loads the model) unless one is given, as tests do."""
    app = Flask(__name__, static_folder=None)
    # Bodies over the limit are refused with 413, chunked ones included.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_payload_bytes
    # The models (SM_MODEL_DIR, a TF Serving layout or multi-model), /v1 and /models routes;
    # the router picks the model for each /invocations request.
    router = models.install(app, settings, service, build_service)
    context.install(app, settings, router)
    register_error_handlers(app)
    app.register_blueprint(sagemaker.blueprint)
    # POST /invocations and GET /ping answered without Flask's per-request machinery.
    fastpath.install(app)
    return app
