"""The supervisor's own answers, over a real unix socket: /ping before and after the server is
ready, the metrics page from the workers' files, and every other request in the envelope."""

from __future__ import annotations

import http.client
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from smserve.frontend.sidecar import NOT_READY, Sidecar
from smserve.media import PROMETHEUS_TEXT
from smserve.metrics import Answered, Metrics


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("sidecar", timeout=5)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(str(self.path))


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[Sidecar]:
    served = Sidecar(tmp_path / "s.sock", "/custom/metrics", tmp_path / "metrics")
    served.start(lambda: {"supervisor": [os.getpid()]})
    yield served
    served.close()


def get(path: Path, method: str, target: str) -> tuple[int, dict[str, str], bytes]:
    connection = UnixConnection(path)
    # no body: the sidecar answers other methods 405 and closes without reading one, and a
    # body sent after that answer fails with EPIPE now and then
    connection.request(method, target)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def test_ping_is_503_until_ready_then_200(sidecar: Sidecar, tmp_path: Path) -> None:
    status, headers, body = get(tmp_path / "s.sock", "GET", "/ping")
    assert (status, json.loads(body)) == (503, {"error": NOT_READY, "message": NOT_READY})
    sidecar.ready.set()
    status, headers, body = get(tmp_path / "s.sock", "GET", "/ping?x=1")
    assert (status, body, headers["content-length"]) == (200, b"", "0")
    assert "content-type" not in headers


def test_the_metrics_page_sums_the_workers_files(sidecar: Sidecar, tmp_path: Path) -> None:
    worker = Metrics(tmp_path / "metrics")
    worker.begin()
    worker.finish(Answered(("v2", "m", "application/json", 200), 0.01, (5, 6), None, "infer"))
    worker.flush()
    status, headers, body = get(tmp_path / "s.sock", "GET", "/custom/metrics")
    assert (status, headers["content-type"]) == (200, PROMETHEUS_TEXT)
    text = body.decode()
    labels = 'door="v2",model="m",format="application/json",status="200"'
    assert f"smserve_requests_total{{{labels}}} 1" in text
    assert 'smserve_processes{process="supervisor"} 1' in text
    assert get(tmp_path / "s.sock", "HEAD", "/custom/metrics")[2] == b""


def test_every_other_request_is_the_envelope(sidecar: Sidecar, tmp_path: Path) -> None:
    status, headers, body = get(tmp_path / "s.sock", "POST", "/ping")
    assert (status, headers["connection"], headers["allow"]) == (405, "close", "GET, HEAD")
    assert json.loads(body)["message"] == "this method is not allowed"
    status, _, body = get(tmp_path / "s.sock", "GET", "/elsewhere")
    assert (status, json.loads(body)["error"]) == (404, "no such route")


def test_the_socket_is_open_to_nginx_workers(sidecar: Sidecar, tmp_path: Path) -> None:
    assert (tmp_path / "s.sock").stat().st_mode & 0o777 == 0o666
