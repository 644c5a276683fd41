"""The six RPCs of ``inference.GRPCInferenceService`` over the model repository: a request
message in, a response message out, errors raised as the ServingErrors every door shares
(``status`` words them as gRPC status codes). Nothing here knows the transport.

Like Triton and MLServer, ``ServerReady`` and ``ModelReady`` answer ``false`` rather than an
error for what is not ready or not served; ``ModelMetadata`` and ``ModelInfer`` of a model or
version that is not served are NOT_FOUND, in Triton's words (as on the REST door).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import json_format

from smserve.v2.infer import (
    ModelSource,
    available_versions,
    infer,
    model_metadata,
    model_ready,
    server_metadata,
    server_ready,
)
from smserve.v2.routes import parse_version
from smserve.v2grpc.protocol import MESSAGES
from smserve.v2grpc.tensors import infer_request, infer_response

Method = Callable[[Any], Any]


class GRPCInferenceAPI:
    """Answers each RPC from a ModelSource (``smserve.repository.modes.Models``)."""

    def __init__(self, models: ModelSource) -> None:
        self.models = models
        self._server_metadata = json_format.ParseDict(
            server_metadata(), MESSAGES["ServerMetadataResponse"]()
        )

    @property
    def methods(self) -> Mapping[str, Method]:
        """Each RPC's name and the method that answers it."""
        return {
            "ServerLive": self.server_live,
            "ServerReady": self.server_ready,
            "ModelReady": self.model_ready,
            "ServerMetadata": self.server_metadata,
            "ModelMetadata": self.model_metadata,
            "ModelInfer": self.model_infer,
        }

    def server_live(self, request: Any) -> Any:
        return MESSAGES["ServerLiveResponse"](live=True)

    def server_ready(self, request: Any) -> Any:
        return MESSAGES["ServerReadyResponse"](ready=server_ready(self.models))

    def model_ready(self, request: Any) -> Any:
        ready = model_ready(self.models, request.name, parse_version(request.version))
        return MESSAGES["ModelReadyResponse"](ready=ready)

    def server_metadata(self, request: Any) -> Any:
        return self._server_metadata

    def model_metadata(self, request: Any) -> Any:
        served = self.models.resolve(request.name, parse_version(request.version))
        document = model_metadata(served, available_versions(self.models, served))
        return json_format.ParseDict(document, MESSAGES["ModelMetadataResponse"]())

    def model_infer(self, request: Any) -> Any:
        served = self.models.resolve(request.model_name, parse_version(request.model_version))
        parsed = infer_request(request)
        outputs = infer(served, parsed)
        return infer_response(served.name, served.version, request.id, outputs)
