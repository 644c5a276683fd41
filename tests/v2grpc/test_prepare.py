"""The gRPC door's ``prepare``: without grpcio, a door on only by default is turned off with
one warning, and one asked for (SMSERVE_GRPC_PORT) is a ConfigError naming the package. grpcio
is hidden here as Python hides a module (``sys.modules[name] = None``: its import fails and
``find_spec`` finds nothing); tests/quickstart uninstalls it for real."""

from __future__ import annotations

import logging
import sys

import pytest

from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.http.server import prepare_doors
from smserve.v2grpc import grpc_installed


@pytest.fixture
def without_grpcio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)
    assert not grpc_installed()


def test_with_grpcio_the_settings_are_served_as_they_are() -> None:
    settings = Settings.from_env({"SMSERVE_GRPC_PORT": "9001"})
    assert grpc_installed()
    assert prepare_doors(settings) == settings


@pytest.mark.usefixtures("without_grpcio")
def test_a_default_on_door_is_turned_off_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings.from_env({})
    assert settings.grpc_port == 8081
    assert not settings.grpc_requested
    with caplog.at_level(logging.WARNING):
        served = prepare_doors(settings)
    assert served.grpc_port == 0
    assert served.replace(grpc_port=8081) == settings
    [record] = caplog.records
    assert "grpcio is not installed" in record.getMessage()
    assert "pip install 'smserve[grpc]'" in record.getMessage()


@pytest.mark.usefixtures("without_grpcio")
def test_a_requested_door_is_a_configuration_error_naming_the_package() -> None:
    settings = Settings.from_env({"SMSERVE_GRPC_PORT": "9001"})
    assert settings.grpc_requested
    with pytest.raises(ConfigError, match=r"SMSERVE_GRPC_PORT=9001 .* grpcio is not installed"):
        prepare_doors(settings)


@pytest.mark.usefixtures("without_grpcio")
def test_grpc_off_needs_no_grpcio() -> None:
    settings = Settings.from_env({"SMSERVE_GRPC_PORT": "0"})
    assert not settings.grpc_requested
    assert prepare_doors(settings) == settings
