"""The gRPC door's own setting, SMSERVE_GRPC_PORT (declared in ``door.DOOR.settings``, read
when the server starts: ``config.declared``). On by default at 8081 (MLServer's and KServe's
gRPC port), except on SageMaker (SAGEMAKER_BIND_TO_PORT set), whose pipelines may give 8081
to another container; ``0`` turns it off."""

from __future__ import annotations

from dataclasses import dataclass

from smserve.config import Declared, Reader, Settings
from smserve.errors import ConfigError

NAME = "SMSERVE_GRPC_PORT"
DEFAULT = 8081


@dataclass(frozen=True, slots=True)
class GrpcPort:
    """``port`` (0: off); ``requested``: SMSERVE_GRPC_PORT set to a port, not only on by
    default (so a missing grpcio stops the server instead of turning the door off)."""

    port: int
    requested: bool = False


def read(env: Reader) -> GrpcPort:
    default = 0 if env.text("SAGEMAKER_BIND_TO_PORT") else DEFAULT
    port = env.integer(NAME, default, minimum=0)
    if port > 65535 or (port and port == env.integer("SAGEMAKER_BIND_TO_PORT", 8080)):
        raise ConfigError(
            f"{NAME}={port} is not a port of its own (1-65535, not the HTTP port "
            "SAGEMAKER_BIND_TO_PORT), nor 0 (gRPC off)"
        )
    return GrpcPort(port, env.integer(NAME, 0, minimum=0) != 0)


GRPC_PORT = Declared(
    NAME,
    read,
    f"`{DEFAULT}`",
    "the Open Inference Protocol over gRPC; `0`: off (the default when "
    "`SAGEMAKER_BIND_TO_PORT` is set)",
)


def grpc_port(settings: Settings) -> int:
    """The port the gRPC door listens on in ``settings`` (0: off)."""
    return GRPC_PORT.of(settings).port


def serving_on(settings: Settings, port: int) -> Settings:
    """``settings`` with the gRPC door on ``port``, as asked for (0: off)."""
    return settings.with_value(GRPC_PORT, GrpcPort(port, requested=port != 0))
