"""The door table: the only place outside a door's package that names a door, and enough for a
new door to be served (routes, prefix, envelope, nginx, OpenAPI) with no other
edit."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest
from flask.testing import FlaskClient

import smserve
from smserve import door_table
from smserve.cli import main
from smserve.config import Settings
from smserve.doors import (
    DoorReply,
    DoorRequest,
    DoorSpec,
    Envelope,
    Mount,
    Prefix,
    Route,
    Setup,
)
from smserve.errors import ConfigError, InvalidInput
from smserve.frontend.nginx import ProxyLayout, render
from smserve.http.app import create_app, dispatcher_of
from smserve.media import JSON, TEXT
from smserve.openapi import Fragment
from tests.fakes import EchoAlgorithm, fake_service

SOURCE = Path(smserve.__file__).parent


def door_packages() -> tuple[str, ...]:
    """The packages whose ``door`` module holds a DoorSpec of the table (none named here)."""
    held = {
        name.rpartition(".")[0]
        for name, module in list(sys.modules.items())
        if name.startswith("smserve.") and getattr(module, "DOOR", None) in door_table.DOORS
    }
    return tuple(sorted(held))


ENVELOPE = Envelope("teapot", ("fault",))


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("layer", ["http", "frontend"])
def test_no_module_of_the_server_layers_imports_a_door(layer: str) -> None:
    doors = door_packages()
    assert len(doors) == len(door_table.DOORS)
    for path in sorted((SOURCE / layer).rglob("*.py")):  # subpackages too (http/upstream/)
        named = {m for m in _imported(path) if m.startswith(doors) or m in doors}
        assert not named, f"{path.name} imports {sorted(named)}: reach doors by door_table"


def test_the_table_names_every_door_once_and_starts_with_an_http_door() -> None:
    names = [door.name for door in door_table.DOORS]
    assert len(set(names)) == len(names)
    assert [f"smserve.{name}" for name in sorted(names)] == list(door_packages())
    assert door_table.DEFAULT.envelope is not None
    assert door_table.default_envelope().body("x") == b'{"error": "x", "message": "x"}'


class TeapotDoor:
    """A door of the test's own: it answers under /teapot, refuses with its envelope."""

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        return DoorReply(400, ENVELOPE.body(str(exc)), JSON, model="pot", verb="brew")

    def brew(self, request: DoorRequest) -> DoorReply:
        if not request.body:
            raise InvalidInput("send tea leaves")
        return DoorReply(200, b"brewed " + request.body, TEXT, model="pot", verb="brew")

    def anything(self, request: DoorRequest) -> DoorReply:
        return DoorReply(200, f"{request.method} {request.path}".encode(), TEXT)


def _open(setup: Setup) -> Mount:
    door = TeapotDoor()
    return Mount(
        door,
        (
            Route(("POST",), "/brew", "brew", door.brew),
            Route(("POST",), "/teapot/<kind>/pour", "pour", door.brew),
        ),
        Prefix(re.compile(r"/teapot(?:/.*)?"), door.anything),
    )


TEAPOT = DoorSpec(
    name="teapot",
    envelope=ENVELOPE,
    open=_open,
    nginx_locations=("/teapot",),
    openapi=lambda setup: Fragment({"/brew": {"post": {"operationId": "brew"}}}),
    reserved_paths=("/brew", "/teapot"),
)


@pytest.fixture
def teapot_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(door_table, "DOORS", (*door_table.DOORS, TEAPOT))


@pytest.fixture
def client(teapot_table: None, tmp_path: Path) -> FlaskClient:
    settings = Settings(runtime_dir=tmp_path)
    return create_app(settings, fake_service(EchoAlgorithm(), settings)).test_client()


def test_a_new_door_is_served_from_its_line_in_the_table(client: FlaskClient) -> None:
    brewed = client.post("/brew", data=b"green")
    assert (brewed.status_code, brewed.data) == (200, b"brewed green")
    assert client.get("/teapot/anything").data == b"GET /teapot/anything"
    refused = client.post("/brew")
    assert (refused.status_code, refused.get_json()) == (400, {"fault": "send tea leaves"})
    assert "/brew" in client.get("/openapi.json").get_json()["paths"]
    assert client.post("/invocations", data=b"1,2\n", content_type="text/csv").status_code == 200


def test_a_new_doors_route_is_found_before_its_prefix(client: FlaskClient) -> None:
    found = dispatcher_of(client.application).table.find("POST", "/teapot/blue/pour")
    assert found is not None
    assert (found.target.door_name, found.params) == ("teapot", {"kind": "blue"})
    poured = client.post("/teapot/blue/pour", data=b"black")
    assert (poured.status_code, poured.data) == (200, b"brewed black")


def test_nginx_gives_a_new_door_its_location_and_envelope(
    teapot_table: None, tmp_path: Path
) -> None:
    text = render(Settings(), ProxyLayout(tmp_path), as_root=False)
    location = text.split("location /teapot {", 1)[1].split("}", 1)[0]
    assert "error_page 404 =404 /_smserve/error/teapot/404;" in location
    assert "proxy_pass http://smserve_gunicorn;" in location
    page = re.search(r"location = /_smserve/error/teapot/404 \{.*?return 404 '(.*?)'; \}", text)
    assert page is not None
    assert json.loads(page.group(1)) == {"fault": "no such route"}


@pytest.mark.parametrize(
    "path", ["/ping", "/v2/metrics", "/monitoring/prometheus/metrics", "/v1/models/m"]
)
def test_a_setting_may_not_take_a_doors_path(path: str) -> None:
    with pytest.raises(ConfigError, match=r"SMSERVE_METRICS_PATH=.* already answers"):
        door_table.check_settings(Settings.from_env({"SMSERVE_METRICS_PATH": path}))


def test_a_new_door_reserves_its_own_paths(teapot_table: None) -> None:
    assert door_table.reserved_paths()[-2:] == ("/brew", "/teapot")
    with pytest.raises(ConfigError, match=r"already answers \(/teapot\)"):
        door_table.check_settings(Settings(metrics_path="/teapot/metrics"))
    door_table.check_settings(Settings(metrics_path="/ops/metrics"))


def test_serve_refuses_a_metrics_path_a_door_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SMSERVE_METRICS_PATH", "/v2/metrics")
    assert main(["serve"]) == 2
    assert "SMSERVE_METRICS_PATH='/v2/metrics' is a path the server already answers (/v2)" in (
        capsys.readouterr().err
    )
