"""TF Serving's REST API (every path matching ``(?i)/v1/.*``) and its metrics page.

Werkzeug's router is case-sensitive and answers unrouted paths with 404/405; TF Serving
matches ``/v1/`` paths case-insensitively with its own two patterns and answers everything
else under ``/v1/`` with ``400 Malformed request: <METHOD> <path>``. So requests under
``/v1/`` do not go through Flask routing: an app-wide ``before_request`` hook hands them to
``tfserving.api`` (which parses the route itself, see ``tfserving.routes``) and returns its
answer; routing 404/405 can therefore never happen there.

Every reply is ``application/json``; predict, classify, regress and metadata replies carry
``X-Model-Version: <version that answered>``. gzip request bodies are inflated. OPTIONS is
the CORS preflight: 200 with an ``Origin`` of ``http(s)://...``, else 400.
"""

from __future__ import annotations

import logging
import re
import time

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

from smserve import metrics as metrics_module
from smserve.errors import ServingError
from smserve.http.context import read_body
from smserve.http.errors import INTERNAL_ERROR_MESSAGE
from smserve.media import JSON
from smserve.metrics import Metrics
from smserve.tfserving import response
from smserve.tfserving.api import ApiReply, TFServingAPI
from smserve.tfserving.encoding import inflate, is_gzip
from smserve.tfserving.routes import is_api_path

logger = logging.getLogger(__name__)

VERSION_HEADER = "X-Model-Version"
API_KEY = "smserve.tfserving"
METRICS_KEY = "smserve.metrics"
_ORIGIN = re.compile(r"https?://")

blueprint = Blueprint("tfserving", __name__)


def install(app: Flask, api: TFServingAPI, metrics: Metrics) -> None:
    app.extensions[API_KEY] = api
    app.extensions[METRICS_KEY] = metrics
    app.register_blueprint(blueprint)


def current_metrics() -> Metrics:
    metrics: Metrics = current_app.extensions[METRICS_KEY]
    return metrics


@blueprint.before_app_request
def answer_api_request() -> Response | None:
    """Answer any ``/v1/`` request (None lets other paths through to Flask's routing)."""
    if not is_api_path(request.path):
        return None
    started = time.perf_counter()
    reply = _reply()
    latency_us = (time.perf_counter() - started) * 1e6 if reply.status == 200 else None
    current_metrics().record(reply.model, reply.code, reply.verb, latency_us)
    return _response(reply)


def _reply() -> ApiReply:
    if request.method == "OPTIONS":
        return _preflight()
    api: TFServingAPI = current_app.extensions[API_KEY]
    try:
        return api.handle(request.method, raw_path(), _body())
    except ServingError as exc:
        return ApiReply(int(exc.status), response.error_body(exc.message))
    except RequestEntityTooLarge:
        limit = request.max_content_length or 0
        message = f"request body exceeds the {limit}-byte limit (SAGEMAKER_MAX_PAYLOAD_IN_MB)"
        return ApiReply(413, response.error_body(message))
    except Exception:
        logger.exception("%s %s failed", request.method, request.path)
        return ApiReply(500, response.error_body(INTERNAL_ERROR_MESSAGE))


def _preflight() -> ApiReply:
    if _ORIGIN.search(request.headers.get("Origin", "")):
        return ApiReply(200, b"")
    return ApiReply(400, response.error_body("Origin header is missing in CORS preflight"))


def raw_path() -> str:
    """The path as the client sent it, still percent-encoded (TF Serving matches on it)."""
    raw = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    return str(raw).partition("?")[0] if raw else request.path


def _body() -> bytes:
    body = read_body() if request.method == "POST" else b""
    if is_gzip(request.headers.get("Content-Encoding")) and body:
        return inflate(body, request.max_content_length or len(body) * 1024)
    return body


def _response(reply: ApiReply) -> Response:
    answer = Response(reply.body, status=reply.status, content_type=JSON)
    if reply.version is not None and reply.status == 200:
        answer.headers[VERSION_HEADER] = str(reply.version)
    return answer


@blueprint.get(metrics_module.PATH)
def prometheus_metrics() -> Response:
    """Prometheus text summed over every worker (see ``smserve.metrics``)."""
    return Response(current_metrics().render(), content_type=metrics_module.CONTENT_TYPE)
