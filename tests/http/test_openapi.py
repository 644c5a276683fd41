"""GET /openapi.json: a valid OpenAPI 3.1 document that describes every route the app
answers, and nothing else. The dispatcher's routes and the prefix doors' grammars are walked;
each must have an operation, and each operation must be a route (so the document cannot
drift)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from openapi_spec_validator import validate

from smserve.codecs import default_registry
from smserve.config import Settings
from smserve.http.app import create_app, dispatcher_of
from smserve.repository import runtime
from smserve.tfserving import routes as tfserving_routes
from smserve.v2 import routes as v2_routes
from tests.fakes import EchoAlgorithm, fake_service

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# The dispatcher answers HEAD on every GET route and OPTIONS on every route; neither is an
# operation.
IMPLICIT = frozenset({"HEAD", "OPTIONS"})
SAMPLES = {"model": "m%2Fx", "model_name": "m", "version": "3", "model_version": "3"}
SAMPLES |= {"label": "stable", "name": "alpha"}


def document_of(app: Flask) -> dict[str, Any]:
    response = app.test_client().get("/openapi.json")
    assert response.status_code == 200
    assert response.content_type == "application/json"
    document: dict[str, Any] = response.get_json()
    return document


@pytest.fixture
def single(app: Flask) -> dict[str, Any]:
    return document_of(app)


@pytest.fixture
def multi(tmp_path: Path) -> tuple[Flask, dict[str, Any]]:
    base = Settings(multi_model=True, models_dir=tmp_path, runtime_dir=tmp_path / "run")
    app = create_app(runtime.prepare(base))
    return app, document_of(app)


def operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in METHODS
    }


def declared_routes(app: Flask) -> set[tuple[str, str]]:
    """Every (method, path) the dispatcher's routes declare, in OpenAPI's placeholder syntax."""
    found = set()
    for methods, rule in dispatcher_of(app).table.rules:
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule)
        found.update((method, path) for method in set(methods) - IMPLICIT)
    return found


def under_prefix(operation: tuple[str, str], prefix: str) -> bool:
    return operation[1] == prefix.rstrip("/") or operation[1].startswith(prefix)


def concrete(path: str) -> str:
    return re.sub(r"\{([a-z_]+)\}", lambda m: SAMPLES[m.group(1)], path)


def test_the_document_is_valid_openapi_3_1(single: dict[str, Any]) -> None:
    assert single["openapi"] == "3.1.0"
    validate(single)


def test_every_route_is_documented_and_nothing_else(app: Flask) -> None:
    documented = operations(document_of(app))
    outside = {op for op in documented if not under_prefix(op, "/v1/") | under_prefix(op, "/v2/")}
    assert outside == declared_routes(app)
    assert ("POST", "/models") not in outside  # a single-model server has no /models


def test_multi_model_routes_are_documented_on_a_multi_model_server(
    multi: tuple[Flask, dict[str, Any]],
) -> None:
    app, document = multi
    validate(document)
    outside = {op for op in operations(document) if not op[1].startswith(("/v1/", "/v2"))}
    assert outside == declared_routes(app)
    assert {("DELETE", "/models/{name}"), ("POST", "/models/{name}/invoke")} <= outside


def test_every_tfserving_route_form_is_documented(single: dict[str, Any]) -> None:
    """Each (action, version form) of TF Serving's grammar has exactly one operation, and
    every documented /v1/ operation parses to a real action (not ``malformed``)."""
    found = []
    for method, path in operations(single):
        if not path.startswith("/v1/") or method == "OPTIONS":
            continue
        route = tfserving_routes.parse_route(method, concrete(path))
        assert route.action in tfserving_routes.ACTIONS, (method, path)
        found.append((route.action, route.version is not None, route.label is not None))
    forms = ((False, False), (True, False), (False, True))
    expected = {
        (action, *form) for action, form in itertools.product(tfserving_routes.ACTIONS, forms)
    }
    assert sorted(found) == sorted(expected)


def test_every_tfserving_path_documents_the_cors_preflight(single: dict[str, Any]) -> None:
    paths = [path for path in single["paths"] if path.startswith("/v1/")]
    assert paths
    assert all("options" in single["paths"][path] for path in paths)


def test_every_v2_route_form_is_documented(single: dict[str, Any]) -> None:
    found = []
    for method, path in operations(single):
        if not (path == "/v2" or path.startswith("/v2/")):
            continue
        route = v2_routes.parse_route(method, concrete(path))
        found.append((route.action, route.version is not None))
    server = [(action, False) for action in v2_routes.SERVER_ACTIONS]
    model = list(itertools.product(v2_routes.MODEL_ACTIONS, (False, True)))
    # /v2 and /v2/ both answer the server's metadata
    assert sorted(found) == sorted([*server, ("server_metadata", False), *model])


def test_invocations_lists_every_codec_media_type(
    multi: tuple[Flask, dict[str, Any]], tmp_path: Path
) -> None:
    registry = default_registry(Settings())
    _, document = multi
    for path, method in (("/invocations", "post"), ("/models/{name}/invoke", "post")):
        operation = document["paths"][path][method]
        assert list(operation["requestBody"]["content"]) == list(registry.decodable)
        assert list(operation["responses"]["200"]["content"]) == list(registry.offers)
    assert len(registry.decodable) == 9  # application/x-npy the last
    assert len(registry.offers) == 8


def test_an_injected_service_s_formats_are_documented() -> None:
    settings = Settings()
    service = fake_service(EchoAlgorithm(), settings)
    post = document_of(create_app(settings, service))["paths"]["/invocations"]["post"]
    assert list(post["requestBody"]["content"]) == list(service.registry.decodable)
