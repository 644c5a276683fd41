"""The Open Inference Protocol (KServe V2) over gRPC: ``inference.GRPCInferenceService``'s
ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata and ModelInfer, on its own
port, answered by the same core as the REST door (``smserve.v2.infer``).

``start`` is what a worker calls once its models are loaded (``door.DOOR`` names it as the
door's listener); ``prepare`` is what the server's first process calls before it forks: grpcio
is an optional package (the ``grpc`` extra, which the image and ``./serve`` install), so with
it missing, the door that is on by default is turned off with a warning, and one the user asked
for (SMSERVE_GRPC_PORT) stops the server with a line saying what to install: never a worker
that fails to boot. This module imports nothing of grpcio: the gunicorn master imports it, and
must never hold gRPC state when it forks.
"""

from __future__ import annotations

import importlib.util
import logging

from smserve.budget import MemoryBudget
from smserve.config import Settings
from smserve.doors import Listener
from smserve.errors import ConfigError
from smserve.metrics import Metrics
from smserve.v2.infer import ModelSource
from smserve.v2grpc.port import GRPC_PORT, GrpcPort

logger = logging.getLogger(__name__)

PACKAGE = "grpcio"  # what pip installs; its module is ``grpc``
INSTALL = "pip install 'smserve[grpc]'"


def prepare(settings: Settings) -> Settings:
    """``settings`` as they can be served: gRPC off (one warning) when grpcio is missing and
    the door is on only by default; ConfigError when SMSERVE_GRPC_PORT asked for it."""
    asked = GRPC_PORT.of(settings)
    if not asked.port or grpc_installed():
        return settings
    if asked.requested:
        raise ConfigError(
            f"SMSERVE_GRPC_PORT={asked.port} asks for the gRPC door, but its package "
            f"{PACKAGE} is not installed: {INSTALL} (or unset SMSERVE_GRPC_PORT)"
        )
    logger.warning(
        "the gRPC door (port %d) is off: its package %s is not installed (%s; "
        "SMSERVE_GRPC_PORT=0 turns gRPC off without this warning)",
        asked.port,
        PACKAGE,
        INSTALL,
    )
    return settings.with_value(GRPC_PORT, GrpcPort(0))


def grpc_installed() -> bool:
    """Whether grpcio can be found; looked up without importing it (see the module doc)."""
    return importlib.util.find_spec("grpc") is not None


def start(settings: Settings, models: ModelSource, metrics: Metrics | None) -> Listener | None:
    """The started gRPC server of this worker (None: gRPC is off), counting its calls in
    ``metrics``; raises StartupError."""
    if not GRPC_PORT.of(settings).port:
        return None
    from smserve.v2grpc.api import GRPCInferenceAPI  # grpcio and the messages, only here
    from smserve.v2grpc.server import GrpcServer

    server = GrpcServer(GRPCInferenceAPI(models, MemoryBudget.of(settings)), settings, metrics)
    server.start()
    return server
