"""SMSERVE_GRPC_PORT, the gRPC door's own setting (``DoorSpec.settings``): read and checked
with the door table, its default on and off SageMaker, listed in the settings reference."""

from __future__ import annotations

import pytest

from smserve import door_table
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.v2grpc.port import GRPC_PORT, GrpcPort, grpc_port, serving_on


def read(env: dict[str, str]) -> Settings:
    return door_table.read_settings(Settings.from_env(env), env)


@pytest.mark.parametrize(
    ("env", "port"),
    [
        ({}, 8081),
        ({"SAGEMAKER_BIND_TO_PORT": "8080"}, 0),  # an inference pipeline may own 8081
        ({"SAGEMAKER_BIND_TO_PORT": "8080", "SMSERVE_GRPC_PORT": "9001"}, 9001),
        ({"SMSERVE_GRPC_PORT": "0"}, 0),
    ],
)
def test_the_grpc_port_setting(env: dict[str, str], port: int) -> None:
    assert grpc_port(read(env)) == port


def test_set_to_a_port_it_is_asked_for_not_only_on_by_default() -> None:
    assert GRPC_PORT.of(read({"SMSERVE_GRPC_PORT": "9001"})) == GrpcPort(9001, requested=True)
    assert GRPC_PORT.of(read({})) == GrpcPort(8081, requested=False)
    assert GRPC_PORT.of(Settings()) == GrpcPort(8081)  # not read: its default
    assert GRPC_PORT.of(serving_on(Settings(), 9002)) == GrpcPort(9002, requested=True)


@pytest.mark.parametrize("value", ["-1", "65536", "8080", "http"])
def test_a_bad_port_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=f"SMSERVE_GRPC_PORT='?{value}"):
        read({"SMSERVE_GRPC_PORT": value})


def test_grpc_and_http_on_one_port_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="SMSERVE_GRPC_PORT=8080 is not a port of its own"):
        read({"SMSERVE_GRPC_PORT": "8080"})


def test_the_settings_reference_lists_it() -> None:
    assert "| `SMSERVE_GRPC_PORT` | `8081` |" in door_table.settings_reference()
