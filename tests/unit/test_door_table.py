"""The door table: the only place outside a door's package that names a door, and enough for a
new door (tests/unit/teapot/, defined outside src/) to be served, counted and documented:
routes (one found before its prefix), prefix, envelope, nginx location, OpenAPI fragment,
metric names, reserved and health paths, and a setting of its own, with no other edit."""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

import smserve
from smserve import door_table
from smserve.cli import main
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.frontend.nginx import ProxyLayout, render
from smserve.frontend.sidecar import NOT_READY, Sidecar
from smserve.http.app import create_app, dispatcher_of
from tests.fakes import EchoAlgorithm, fake_service
from tests.unit.frontend.test_sidecar import get
from tests.unit.teapot import door as teapot

SOURCE = Path(smserve.__file__).parent
ROOT = SOURCE.parents[1]


def door_packages() -> tuple[str, ...]:
    """The packages whose ``door`` module holds a DoorSpec of the table (none named here)."""
    held = {
        name.rpartition(".")[0]
        for name, module in list(sys.modules.items())
        if name.startswith("smserve.") and getattr(module, "DOOR", None) in door_table.DOORS
    }
    return tuple(sorted(held))


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


@pytest.mark.parametrize("layer", ["http", "frontend", "metrics", "config"])
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


@pytest.fixture
def teapot_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(door_table, "DOORS", (*door_table.DOORS, teapot.DOOR))


@pytest.fixture
def client(teapot_table: None, tmp_path: Path) -> FlaskClient:
    settings = door_table.read_settings(
        Settings(runtime_dir=tmp_path), {"SMSERVE_TEAPOT_STRENGTH": "5"}
    )
    return create_app(settings, fake_service(EchoAlgorithm(), settings)).test_client()


def test_a_new_door_is_served_from_its_line_in_the_table(client: FlaskClient) -> None:
    brewed = client.post("/brew", data=b"green")
    assert (brewed.status_code, brewed.data) == (200, b"brewed green x5")
    assert client.get("/teapot/anything").data == b"GET /teapot/anything"
    refused = client.post("/brew")
    assert (refused.status_code, refused.get_json()) == (400, {"fault": "send tea leaves"})
    assert (client.get(teapot.HEALTH).status_code, client.get(teapot.HEALTH).data) == (200, b"")
    assert client.post("/invocations", data=b"1,2\n", content_type="text/csv").status_code == 200


def test_a_new_doors_route_is_found_before_its_prefix(client: FlaskClient) -> None:
    found = dispatcher_of(client.application).table.find("POST", "/teapot/blue/pour")
    assert found is not None
    assert (found.target.door_name, found.params) == ("teapot", {"kind": "blue"})
    poured = client.post("/teapot/blue/pour", data=b"black")
    assert (poured.status_code, poured.data) == (200, b"brewed black x5")


def test_a_new_door_is_counted_in_its_own_names_and_on_the_metrics_page(
    client: FlaskClient,
) -> None:
    client.post("/brew", data=b"green")
    client.post("/brew")
    client.post("/invocations", data=b"1,2\n", content_type="text/csv")
    own = client.get(teapot.PAGE).data.decode()
    assert 'teapot_brews_total{model_name="pot",status="brewed"} 1' in own
    assert 'teapot_brews_total{model_name="pot",status="spilled"} 1' in own
    labels = 'model_name="pot",API="brew",entrypoint="REST"'
    assert f'teapot_brew_microseconds_bucket{{{labels},le="+Inf"}} 1' in own
    # every door's API requests count in every door's names: /invocations in the teapot's,
    # the teapot's brews in TF Serving's (the first door that declares names, still counted)
    assert 'teapot_brews_total{model_name="model",status="brewed"} 1' in own
    tf = client.get("/monitoring/prometheus/metrics").data.decode()
    assert ':tensorflow:serving:request_count{model_name="pot",status="OK"} 1' in tf
    page = client.get("/metrics").data.decode()
    assert 'smserve_requests_total{door="teapot",model="pot",format="",status="200"} 1' in page


def test_a_new_door_is_documented(client: FlaskClient) -> None:
    assert "/brew" in client.get("/openapi.json").get_json()["paths"]
    reference = door_table.settings_reference()
    assert "| `SMSERVE_TEAPOT_STRENGTH` | `3` | spoons of tea per pot (1 to 9) |" in reference


def test_a_new_doors_setting_is_read_checked_and_defaulted(teapot_table: None) -> None:
    settings = door_table.read_settings(Settings(), {"SMSERVE_TEAPOT_STRENGTH": "7"})
    assert teapot.STRENGTH.of(settings) == 7
    assert teapot.STRENGTH.of(Settings()) == 3  # not read: its default
    assert teapot.STRENGTH.of(settings.with_value(teapot.STRENGTH, 2)) == 2
    for value, message in (("10", "at most 9 spoons"), ("x", "is not an integer")):
        with pytest.raises(ConfigError, match=f"SMSERVE_TEAPOT_STRENGTH=.*{message}"):
            door_table.read_settings(Settings(), {"SMSERVE_TEAPOT_STRENGTH": value})


def test_nginx_gives_a_new_door_its_location_envelope_and_health_path(
    teapot_table: None, tmp_path: Path
) -> None:
    text = render(Settings(), ProxyLayout(tmp_path), as_root=False)
    location = text.split("location /teapot {", 1)[1].split("}", 1)[0]
    assert "error_page 404 =404 /_smserve/error/teapot/404;" in location
    assert "proxy_pass http://smserve_gunicorn;" in location
    page = re.search(r"location = /_smserve/error/teapot/404 \{.*?return 404 '(.*?)'; \}", text)
    assert page is not None
    assert json.loads(page.group(1)) == {"fault": "no such route"}
    for path in ("/ping", teapot.HEALTH):  # every door's health path, to the supervisor
        health = text.split(f"location = {path} {{", 1)[1].split("}", 1)[0]
        assert "proxy_pass http://smserve_supervisor;" in health


@pytest.fixture
def sidecar(teapot_table: None, tmp_path: Path) -> Iterator[Sidecar]:
    served = Sidecar(tmp_path / "s.sock", "/metrics", tmp_path / "metrics")
    served.start(dict)
    yield served
    served.close()


def test_the_supervisor_answers_a_new_doors_health_path(sidecar: Sidecar, tmp_path: Path) -> None:
    status, _, body = get(tmp_path / "s.sock", "GET", teapot.HEALTH)
    assert (status, json.loads(body)) == (503, {"fault": NOT_READY})  # in the door's envelope
    sidecar.ready.set()
    for path in (teapot.HEALTH, "/ping"):
        assert get(tmp_path / "s.sock", "GET", path)[::2] == (200, b"")


def _taking(paths: tuple[str, ...]) -> list[str]:
    """A metrics path inside each reserved path (a prefix, or the path itself)."""
    return [path.rstrip("/") + ("/metrics" if path.endswith("/") else "") for path in paths]


@pytest.mark.parametrize("path", _taking(door_table.reserved_paths()))
def test_a_setting_may_not_take_a_path_the_server_answers(path: str) -> None:
    with pytest.raises(ConfigError, match=r"SMSERVE_METRICS_PATH=.* already answers"):
        door_table.read_settings(Settings.from_env({"SMSERVE_METRICS_PATH": path}), {})


def test_the_server_reserves_its_own_paths_and_every_doors() -> None:
    reserved = door_table.reserved_paths()
    assert reserved[:2] == ("/_smserve/", "/openapi.json")
    for door in door_table.DOORS:
        assert set(door.reserved_paths) | set(door.health_paths) <= set(reserved)


def test_a_new_door_reserves_its_own_paths(teapot_table: None) -> None:
    assert door_table.reserved_paths()[-3:] == ("/brew", "/teapot", teapot.HEALTH)
    with pytest.raises(ConfigError, match=r"already answers \(/teapot\)"):
        door_table.check_settings(Settings(metrics_path="/teapot/metrics"))
    door_table.check_settings(Settings(metrics_path="/ops/metrics"))


def test_serve_refuses_a_metrics_path_a_door_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = door_table.reserved_paths()[-1]  # the last door's
    (path,) = _taking((taken,))
    monkeypatch.setenv("SMSERVE_METRICS_PATH", path)
    assert main(["serve"]) == 2
    expected = f"SMSERVE_METRICS_PATH={path!r} is a path the server already answers ({taken})"
    assert expected in capsys.readouterr().err


def test_the_settings_reference_lists_every_doors_settings() -> None:
    """docs/settings.md holds the table ``settings_reference`` writes, between its markers."""
    text = (ROOT / "docs" / "settings.md").read_text()
    begin, end = "<!-- doors' settings: begin -->\n", "<!-- doors' settings: end -->"
    written = text.split(begin, 1)[1].split(end, 1)[0]
    assert written == door_table.settings_reference(), (
        "docs/settings.md is stale: put door_table.settings_reference() between its markers"
    )
