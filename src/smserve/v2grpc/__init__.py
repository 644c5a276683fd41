"""The Open Inference Protocol (KServe V2) over gRPC: ``inference.GRPCInferenceService``'s
ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata and ModelInfer, on its own
port, answered by the same core as the REST door (``smserve.v2.infer``).

``start`` is what a worker calls once its models are loaded (``door.DOOR`` names it as the
door's listener). This module imports nothing of grpcio: the
gunicorn master imports it, and must never hold gRPC state when it forks.
"""

from __future__ import annotations

from smserve.budget import MemoryBudget
from smserve.config import Settings
from smserve.doors import Listener
from smserve.metrics import Metrics
from smserve.v2.infer import ModelSource


def start(settings: Settings, models: ModelSource, metrics: Metrics | None) -> Listener | None:
    """The started gRPC server of this worker (None: gRPC is off), counting its calls in
    ``metrics``; raises StartupError."""
    if not settings.grpc_port:
        return None
    from smserve.v2grpc.api import GRPCInferenceAPI  # grpcio and the messages, only here
    from smserve.v2grpc.server import GrpcServer

    server = GrpcServer(GRPCInferenceAPI(models, MemoryBudget.of(settings)), settings, metrics)
    server.start()
    return server
