"""The SageMaker hosting routes: GET /ping, POST /invocations, GET /execution-parameters.

``/invocations`` answers with the model ``X-Amzn-SageMaker-Target-Model`` names, else the
repository's default model (a multi-model endpoint has none: the header is required).
X-Amzn-SageMaker-Custom-Attributes goes to the service (its ``outputs`` attribute selects the
request's outputs); an answer from a model with selectable outputs carries the header back,
``outputs=<key>,...``, naming the outputs it holds. Every answer names the version that gave
it (``DoorReply.version``, written as ``X-Model-Version``) and counts as API ``invocations``.
"""

from __future__ import annotations

from http import HTTPStatus

from smserve.config import Settings
from smserve.custom_attributes import applied
from smserve.doors import DoorReply, DoorRequest
from smserve.errors import InvalidInput
from smserve.repository.loading import ServedModel
from smserve.repository.modes import Models
from smserve.sagemaker import envelope
from smserve.service import Reply

TARGET_HEADER = "X-Amzn-SageMaker-Target-Model"
CUSTOM_ATTRIBUTES_HEADER = "X-Amzn-SageMaker-Custom-Attributes"
INFERENCE_ID_HEADER = "X-Amzn-SageMaker-Inference-Id"  # the caller's id; logged at debug
INVOCATIONS = "invocations"  # the metrics' API name, and the routes that count as one
INVOCATION_ROUTES = frozenset({"invocations", "endpoint_invocations", "invoke_model"})


class SageMakerAPI:
    """Answers the hosting routes from the repository."""

    def __init__(self, models: Models, settings: Settings) -> None:
        self.models = models
        self.settings = settings

    def ping(self, request: DoorRequest) -> DoorReply:
        """200 with an empty body: this worker's models are loaded (no other work)."""
        return envelope.empty_reply(HTTPStatus.OK)

    def invoke(self, request: DoorRequest) -> DoorReply:
        """Predict on the body with the target model."""
        return answer(self.target(request.headers.get(TARGET_HEADER)), request)

    def target(self, name: str | None) -> ServedModel:
        """The model that answers: ``name``'s, else the default one."""
        default = self.models.default_model
        if not name and default is None:
            raise InvalidInput(f"multi-model endpoint: name the model in {TARGET_HEADER}")
        return self.models.resolve(name or str(default))

    def execution_parameters(self, request: DoorRequest) -> DoorReply:
        """What Batch Transform should send: concurrency, record batching and payload size."""
        settings = self.settings
        parameters = {
            "MaxConcurrentTransforms": settings.max_concurrent_transforms or settings.workers,
            "BatchStrategy": settings.batch_strategy,
            "MaxPayloadInMB": settings.max_payload_mib,
        }
        return envelope.json_reply(parameters)

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        """The envelope for ``exc``; an invocation's is counted for the model it named."""
        where = f"{request.method} {request.path}"
        if request.route not in INVOCATION_ROUTES:
            return envelope.error_reply(exc, where)
        return envelope.error_reply(exc, where, self.requested_model(request), INVOCATIONS)

    def requested_model(self, request: DoorRequest) -> str:
        named = request.params.get("name") if request.route == "invoke_model" else None
        return named or request.headers.get(TARGET_HEADER) or self.models.default_model or ""


def answer(served: ServedModel, request: DoorRequest) -> DoorReply:
    """``served``'s answer to the request's body, headers and custom attributes."""
    headers = request.headers
    reply = served.service.invoke(
        request.body,
        headers.get("Content-Type"),
        headers.get("Accept"),
        headers.get(CUSTOM_ATTRIBUTES_HEADER),
    )
    return reply_of(reply, served)


def reply_of(reply: Reply | None, served: ServedModel) -> DoorReply:
    """200 with the reply (and its outputs in the custom attributes header), or 204."""
    if reply is None:  # nothing to predict: an empty body with no Content-Type
        return DoorReply(
            HTTPStatus.NO_CONTENT, b"", None, (), served.name, INVOCATIONS, served.version
        )
    headers = () if reply.outputs is None else ((CUSTOM_ATTRIBUTES_HEADER, applied(reply.outputs)),)
    return DoorReply(
        HTTPStatus.OK,
        reply.body,
        reply.media_type,
        headers,
        served.name,
        INVOCATIONS,
        served.version,
        reply.stages,
    )
