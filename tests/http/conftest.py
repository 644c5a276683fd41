"""An app per test with an injected service around a fake algorithm (no model, no ML code)."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from tests.fakes import EchoAlgorithm, fake_service


@pytest.fixture
def settings() -> Settings:
    return Settings(workers=3)


@pytest.fixture
def algorithm() -> EchoAlgorithm:
    return EchoAlgorithm()


@pytest.fixture
def app(settings: Settings, algorithm: EchoAlgorithm) -> Flask:
    return create_app(settings, fake_service(algorithm, settings))


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()
