"""Every door's health paths through a real nginx to the supervisor's sidecar, for the table
as it is and for one a test supplies (the teapot door, tests/unit/teapot/): nginx hands each
to the sidecar, which answers 503 in that door's envelope until the server is ready, then 200,
with no worker running at all."""

from __future__ import annotations

import http.client
import json
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smserve import door_table
from smserve.config import Settings
from smserve.frontend.nginx import ProxyLayout, write_config
from smserve.frontend.sidecar import NOT_READY, Sidecar
from tests.process.servers import free_port
from tests.unit.frontend.test_nginx import nginx_or_fail
from tests.unit.teapot import door as teapot


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A directory nginx's workers (nobody, as root) may traverse: pytest's are 0700."""
    with tempfile.TemporaryDirectory(prefix="smserve-health-") as name:
        path = Path(name)
        path.chmod(0o755)
        yield path


@pytest.fixture
def proxied(monkeypatch: pytest.MonkeyPatch, run_dir: Path) -> Iterator[tuple[int, Sidecar]]:
    """nginx and the sidecar, for the table with the teapot door added; no workers."""
    monkeypatch.setattr(door_table, "DOORS", (*door_table.DOORS, teapot.DOOR))
    settings = Settings(port=free_port(), bind_host="127.0.0.1", runtime_dir=run_dir)
    layout = ProxyLayout(run_dir)
    sidecar = Sidecar(layout.sidecar_socket, settings.metrics_path, run_dir / "metrics")
    sidecar.start(dict)
    config = write_config(settings, layout)
    nginx = subprocess.Popen(
        [nginx_or_fail(), "-c", str(config), "-e", "stderr"], stderr=subprocess.DEVNULL
    )
    try:
        _wait_listening(settings.port)
        yield settings.port, sidecar
    finally:
        nginx.terminate()  # the nginx this fixture started, by its handle
        nginx.wait(timeout=30)
        sidecar.close()


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            _get(port, "/ping")
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"nginx did not listen on {port} within 20 s")


def _get(port: int, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_every_doors_health_path_is_answered_by_the_supervisor_through_nginx(
    proxied: tuple[int, Sidecar],
) -> None:
    port, sidecar = proxied
    status, body = _get(port, teapot.HEALTH)
    assert (status, json.loads(body)) == (503, {"fault": NOT_READY})
    status, body = _get(port, "/ping")
    assert (status, json.loads(body)["message"]) == (503, NOT_READY)
    sidecar.ready.set()
    for path in door_table.health_paths():
        assert _get(port, path) == (200, b""), path
    assert set(door_table.health_paths()) == {"/ping", teapot.HEALTH}
