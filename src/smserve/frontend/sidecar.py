"""The doors' health checks (``/ping``) and the metrics page, answered by the supervisor on a
unix socket of its own.

Why not the workers: a gthread worker with one thread answers one request at a time, so behind
a 30-second (or hour-long, asynchronous) prediction on every worker a health check or a
metrics scrape would wait, and SageMaker would take the endpoint for dead. The supervisor
already runs beside nginx and does nothing but wait for its children, so it answers these
paths at once, whatever the workers do:

* every door's ``health_paths`` (``door_table.health_paths``: SageMaker's ``/ping``): 200
  (empty) once nginx has carried a request to a worker and back (the supervisor's start-up
  probe), 503 in that door's envelope before that;
* the metrics page (SMSERVE_METRICS_PATH): ``metrics.page`` over every worker's counts file
  and the processes of the server (this one, nginx, the gunicorn master and its workers).

Any other method is a 405 in the same envelope. The socket is open to every user: nginx's
workers run as nobody when nginx starts as root."""

from __future__ import annotations

import logging
import os
import socketserver
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from smserve import door_table
from smserve.door_table import default_envelope
from smserve.media import JSON, PROMETHEUS_TEXT
from smserve.metrics import page, store

logger = logging.getLogger(__name__)

Roles = Callable[[], Mapping[str, Sequence[int]]]
NOT_READY = "the model server is starting: no worker has answered yet; retry shortly"
IDLE_TIMEOUT_S = 65  # longer than nginx keeps an idle upstream connection (nginx.UPSTREAM_IDLE_S)


class Sidecar:
    """Bound at construction (so nginx can connect as soon as it starts); ``start`` serves."""

    def __init__(self, socket_path: Path, metrics_path: str, metrics_dir: Path) -> None:
        self.ready = threading.Event()
        self.metrics_path = metrics_path
        self.metrics_dir = metrics_dir
        self.health = door_table.health_paths()
        self.roles: Roles = dict
        self._server = _Server(str(socket_path), _Handler)
        self._server.sidecar = self
        os.chmod(socket_path, 0o666)

    def start(self, roles: Roles) -> None:
        self.roles = roles
        thread = threading.Thread(
            target=self._server.serve_forever, name="smserve-sidecar", daemon=True
        )
        thread.start()

    def close(self) -> None:
        self._server.server_close()

    def answer(self, path: str) -> tuple[int, str | None, bytes]:
        """(status, Content-Type, body) for a GET of ``path``."""
        if path == self.metrics_path:
            files = store.read_all(self.metrics_dir)
            return 200, PROMETHEUS_TEXT, page.render(files, self.roles()).encode()
        envelope = self.health.get(path)
        if envelope is None:
            return 404, JSON, default_envelope().body("no such route")
        if self.ready.is_set():
            return 200, None, b""
        return 503, JSON, envelope.body(NOT_READY)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    sidecar: Sidecar


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's naming
        self._respond(*self.server.sidecar.answer(self.path.partition("?")[0]))

    def do_HEAD(self) -> None:  # noqa: N802
        status, content_type, body = self.server.sidecar.answer(self.path.partition("?")[0])
        self._respond(status, content_type, body, send_body=False)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every other method (501 here) and malformed requests: the envelope, then close."""
        text = "this method is not allowed" if code == 501 else (message or "bad request")
        self.close_connection = True
        if code == 501:  # a 405 names what is allowed (RFC 9110)
            self.send_response(405)
            self.send_header("Allow", "GET, HEAD")
        else:
            self.send_response(code)
        self._respond(None, JSON, default_envelope().body(text), close=True)

    def _respond(
        self,
        status: int | None,
        content_type: str | None,
        body: bytes,
        send_body: bool = True,
        close: bool = False,
    ) -> None:
        """Answer ``status`` (None: its status line is already sent) with ``body``."""
        if status is not None:
            self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def address_string(self) -> str:
        return "nginx"  # a unix socket's peer has no address

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        logger.debug("sidecar: " + format, *args)
