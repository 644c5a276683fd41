"""The SageMaker hosting routes: GET /ping, POST /invocations (also under
/endpoints/<name>/invocations, the path boto3 and the SDK use), GET /execution-parameters.

Views only move headers and bytes; errors propagate to the app's handlers (http/errors.py).
X-Amzn-SageMaker-Custom-Attributes goes to the service (its ``outputs`` attribute selects the
request's outputs); an answer from a model with selectable outputs carries the header back,
``outputs=<key>,...``, naming the outputs it holds."""

from __future__ import annotations

import json
from http import HTTPStatus

from flask import Blueprint, Response, request

from smserve.custom_attributes import applied
from smserve.http.context import current_service, current_settings, read_body
from smserve.media import JSON
from smserve.service import Reply

CUSTOM_ATTRIBUTES_HEADER = "X-Amzn-SageMaker-Custom-Attributes"

blueprint = Blueprint("sagemaker", __name__)


@blueprint.get("/ping")
def ping() -> Response:
    """200 with an empty body once this worker's model is loaded (503 before); no other work."""
    current_service()
    return empty_response(HTTPStatus.OK)


@blueprint.post("/invocations")
@blueprint.post("/endpoints/<name>/invocations")
def invocations(name: str | None = None) -> Response:
    """Predict on the body. ``name`` is the endpoint name in the boto3 path; one model is
    served, so it is not used."""
    body = read_body()
    headers = request.headers
    reply = current_service().invoke(
        body, request.content_type, headers.get("Accept"), headers.get(CUSTOM_ATTRIBUTES_HEADER)
    )
    return reply_response(reply)


@blueprint.get("/execution-parameters")
def execution_parameters() -> Response:
    """What Batch Transform should send: concurrency, record batching and payload size."""
    settings = current_settings()
    parameters = {
        "MaxConcurrentTransforms": settings.max_concurrent_transforms or settings.workers,
        "BatchStrategy": settings.batch_strategy,
        "MaxPayloadInMB": settings.max_payload_mib,
    }
    return Response(json.dumps(parameters).encode(), content_type=JSON)


def reply_response(reply: Reply | None) -> Response:
    """200 with the reply (and its outputs in the custom attributes header), or 204."""
    if reply is None:
        return empty_response(HTTPStatus.NO_CONTENT)
    response = Response(reply.body, status=HTTPStatus.OK, content_type=reply.media_type)
    if reply.outputs is not None:
        response.headers[CUSTOM_ATTRIBUTES_HEADER] = applied(reply.outputs)
    return response


def empty_response(status: int) -> Response:
    """An empty body with no Content-Type (there is nothing to describe)."""
    response = Response(b"", status=status)
    del response.headers["Content-Type"]
    return response
