"""The gRPC door's ``prepare``: without grpcio, a door on only by default is turned off with
one warning, and one asked for (SMSERVE_GRPC_PORT) is a ConfigError naming the package. grpcio
is hidden here as Python hides a module (``sys.modules[name] = None``: its import fails and
``find_spec`` finds nothing); tests/quickstart uninstalls it for real."""

from __future__ import annotations

import logging
import sys

import pytest

from smserve import door_table
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.http.server import prepare_doors
from smserve.v2grpc import grpc_installed
from smserve.v2grpc.port import GRPC_PORT, GrpcPort


def read(env: dict[str, str]) -> Settings:
    return door_table.read_settings(Settings.from_env(env), env)


@pytest.fixture
def without_grpcio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)
    assert not grpc_installed()


def test_with_grpcio_the_settings_are_served_as_they_are() -> None:
    settings = read({"SMSERVE_GRPC_PORT": "9001"})
    assert grpc_installed()
    assert prepare_doors(settings) == settings


@pytest.mark.usefixtures("without_grpcio")
def test_a_default_on_door_is_turned_off_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = read({})
    assert GRPC_PORT.of(settings) == GrpcPort(8081, requested=False)
    with caplog.at_level(logging.WARNING):
        served = prepare_doors(settings)
    assert GRPC_PORT.of(served).port == 0
    assert served.with_value(GRPC_PORT, GrpcPort(8081)) == settings
    [record] = caplog.records
    assert "grpcio is not installed" in record.getMessage()
    assert "pip install 'smserve[grpc]'" in record.getMessage()


@pytest.mark.usefixtures("without_grpcio")
def test_a_requested_door_is_a_configuration_error_naming_the_package() -> None:
    settings = read({"SMSERVE_GRPC_PORT": "9001"})
    assert GRPC_PORT.of(settings).requested
    with pytest.raises(ConfigError, match=r"SMSERVE_GRPC_PORT=9001 .* grpcio is not installed"):
        prepare_doors(settings)


@pytest.mark.usefixtures("without_grpcio")
def test_grpc_off_needs_no_grpcio() -> None:
    settings = read({"SMSERVE_GRPC_PORT": "0"})
    assert not GRPC_PORT.of(settings).requested
    assert prepare_doors(settings) == settings
