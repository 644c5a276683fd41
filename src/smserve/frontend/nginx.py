"""nginx's configuration for serving, rendered from Settings.

What each part is for:

* ``client_header_timeout`` / ``client_body_timeout``: a client whose headers are not complete
  in time, or whose body stalls longer than allowed, is dropped (nginx closes a stalled-header
  connection without an answer and answers a stalled body 408), so it never reaches gunicorn.
* ``proxy_request_buffering on``: the whole body is read before gunicorn sees the request;
  chunked bodies arrive there with a Content-Length. ``client_max_body_size`` answers 413
  over the limit. Up to ``request_buffer_bytes`` of a body is held in memory (for as long as
  the request lasts: while a slow client reads its answer too); a larger one (up to 1 GB for
  asynchronous inference) waits in a temp file in the run directory, so nginx's memory grows
  neither with the payload limit nor with the clients that read slowly.
* The upstream is gunicorn on a unix socket with keep-alive (HTTP/1.1, ``Connection ""``).
  Its idle timeout is shorter than gunicorn's keep-alive, so nginx never reuses a connection
  gunicorn is closing. Up to ``UPSTREAM_KEPT`` idle ones are kept: each request in flight needs
  its own, and with a small cache every burst reopened connections whose requests then queued
  behind the rest (p99 6x p50 at 64 connections; 2.2x kept). An idle one costs a worker an fd.
* Health paths (``DoorSpec.health_paths``) and the metrics page go to the supervisor's own
  socket (``frontend.sidecar``), never to a worker: they answer while every worker is busy.
* Answers are buffered: ``response_buffer_bytes`` per connection in memory, the rest in a
  temp file of at most ``response_spill_bytes``, so a client that reads slowly (or never)
  holds neither a gunicorn worker nor more than that much of nginx's memory. A larger answer
  makes its worker wait for the client (at most SAGEMAKER_MODEL_SERVER_TIMEOUT between two
  writes).
* Every answer nginx gives itself is a JSON envelope (``frontend.error_pages``): under a
  door's own locations (``DoorSpec.nginx_locations``, from ``smserve.door_table``) that
  door's envelope, elsewhere the default door's.
* Paths are quoted, so a run directory may hold spaces.
* The queue bound (``SMSERVE_MAX_QUEUED_REQUESTS``, ``frontend.queue_bound``): past one POST
  per request thread plus the bound, nginx answers 503 with ``Retry-After`` at once.
"""

from __future__ import annotations

import os
import pwd
import resource
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from smserve import door_table
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.frontend import queue_bound
from smserve.frontend.error_pages import (
    ERROR_PREFIX,
    HEADER_BUFFER,
    envelope_prefix,
    error_locations,
    error_page_lines,
)
from smserve.media import JSON

UPSTREAM_IDLE_S = 50  # nginx drops idle upstream connections after this; gunicorn keeps longer
UPSTREAM_KEPT = 1024  # idle upstream connections nginx keeps open (see the module)
BUFFER = 64 * 1024  # one response buffer
SIDECAR_TIMEOUT_S = 10
_NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


def find_nginx(settings: Settings) -> str | None:
    """The nginx executable: SMSERVE_NGINX, else on PATH or where Debian and source builds
    put it; None when there is none. Raises ConfigError when SMSERVE_NGINX is not one."""
    if settings.nginx is not None:
        if not (settings.nginx.is_file() and os.access(settings.nginx, os.X_OK)):
            raise ConfigError(f"SMSERVE_NGINX={settings.nginx} is not an executable file")
        return str(settings.nginx)
    found = shutil.which("nginx")
    if found is not None:
        return found
    return next((c for c in _NGINX_CANDIDATES if os.access(c, os.X_OK)), None)


@dataclass(frozen=True)
class ProxyLayout:
    """Where the proxy's files live, inside one server run's directory."""

    run_dir: Path

    @property
    def upstream_socket(self) -> Path:
        return self.run_dir / "gunicorn.sock"

    @property
    def sidecar_socket(self) -> Path:
        return self.run_dir / "supervisor.sock"

    @property
    def config_file(self) -> Path:
        return self.run_dir / "nginx.conf"

    @property
    def temp_dir(self) -> Path:
        return self.run_dir / "nginx"


def worker_user(as_root: bool) -> tuple[str, str] | None:
    """The (user, group) nginx's workers run as: nobody when started as root, else None (they
    stay this process's user)."""
    if not as_root:
        return None
    import grp

    try:
        grp.getgrnam("nogroup")
        return "nobody", "nogroup"
    except KeyError:
        return "nobody", grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name


def render(settings: Settings, layout: ProxyLayout, as_root: bool) -> str:
    """The whole nginx.conf for ``settings``."""
    return "\n".join(
        [
            *_main_context(settings, layout, as_root),
            "http {",
            *_indent(_http_context(settings, layout)),
            *_indent(_server(settings)),
            "}",
            "",
        ]
    )


def write_config(settings: Settings, layout: ProxyLayout) -> Path:
    """Write nginx.conf into the run directory; returns its path."""
    as_root = os.geteuid() == 0
    if as_root:  # nginx's workers run as nobody: let them reach the socket (traverse only)
        layout.run_dir.chmod(0o711)
    layout.temp_dir.mkdir(exist_ok=True)
    layout.config_file.write_text(render(settings, layout, as_root))
    return layout.config_file


def worker_connections(settings: Settings) -> int:
    """Client plus upstream connections of the one worker, within the open-files limit."""
    wanted = 2 * settings.max_connections + 64
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(64, min(wanted, soft - 64))


def quote(path: Path | str) -> str:
    """``path`` as an nginx string: double quotes, backslash and quote escaped."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _main_context(settings: Settings, layout: ProxyLayout, as_root: bool) -> list[str]:
    user = worker_user(as_root)
    return [
        "daemon off;",
        "master_process on;",
        "worker_processes 1;",
        *([] if user is None else [f"user {user[0]} {user[1]};"]),
        f"pid {quote(layout.run_dir / 'nginx.pid')};",
        f"error_log stderr {_log_level(settings)};",
        f"worker_shutdown_timeout {settings.graceful_timeout_s}s;",
        f"events {{ worker_connections {worker_connections(settings)}; multi_accept on; }}",
    ]


def _http_context(settings: Settings, layout: ProxyLayout) -> list[str]:
    temp = layout.temp_dir
    kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    return [
        "access_log off;",
        "server_tokens off;",
        "sendfile off;",
        "tcp_nodelay on;",
        f"default_type {JSON};",
        *(f"{kind}_temp_path {quote(temp / kind)};" for kind in kinds),
        *_upstream("smserve_gunicorn", layout.upstream_socket, upstream_kept(settings)),
        *_upstream("smserve_supervisor", layout.sidecar_socket, 4),
        *queue_bound.zone_lines(settings),
    ]


def upstream_kept(settings: Settings) -> int:
    """Idle connections to gunicorn nginx keeps: ``UPSTREAM_KEPT``, at most one per client."""
    return min(UPSTREAM_KEPT, settings.max_connections)


def _upstream(name: str, socket: Path, keepalive: int) -> list[str]:
    """A unix-socket upstream with ``keepalive`` idle connections kept (at least 8)."""
    return [
        f"upstream {name} {{",
        f"    server {quote(f'unix:{socket}')} max_fails=0;",
        f"    keepalive {max(8, keepalive)};",
        f"    keepalive_timeout {UPSTREAM_IDLE_S}s;",
        "    keepalive_requests 1000000;",
        "}",
    ]


def _door_locations(settings: Settings) -> list[list[str]]:
    """A proxied location for each of a door's ``nginx_locations``, with its error pages."""
    return [
        _proxy_location(settings, match, error_page_lines(settings, envelope_prefix(envelope)))
        for door in door_table.DOORS
        if (envelope := door.envelope) is not None
        for match in door.nginx_locations
    ]


def _server(settings: Settings) -> list[str]:
    doors = _door_locations(settings)
    sidecar = [_sidecar_location(p) for p in (*door_table.health_paths(), settings.metrics_path)]
    return [
        "server {",
        *_indent(_server_settings(settings)),
        *_indent(_proxy_location(settings, "/")),
        *(line for location in [*doors, *sidecar] for line in _indent(location)),
        *_indent(error_locations(settings)),
        "}",
    ]


def _server_settings(settings: Settings) -> list[str]:
    limit = settings.max_payload_bytes
    return [
        f"listen {settings.bind_host}:{settings.port} backlog=4096;",
        f"client_header_timeout {settings.client_header_timeout_s}s;",
        f"client_body_timeout {settings.client_body_timeout_s}s;",
        f"client_max_body_size {limit};",
        f"client_body_buffer_size {min(limit, settings.request_buffer_bytes)};",
        f"large_client_header_buffers 4 {HEADER_BUFFER};",
        f"keepalive_timeout {settings.keep_alive_s}s;",
        f"keepalive_requests {settings.keepalive_requests};",
        f"send_timeout {settings.timeout_s}s;",
        "underscores_in_headers on;",
        "lingering_close on;",
        *queue_bound.limit_lines(settings),
        *error_page_lines(settings, ERROR_PREFIX),
    ]


def _proxy_location(settings: Settings, match: str, extra: Sequence[str] = ()) -> list[str]:
    """Proxy ``match`` to gunicorn; ``extra``: the location's own directives."""
    return [
        f"location {match} {{",
        *(f"    {line}" for line in extra),
        "    proxy_pass http://smserve_gunicorn;",
        *_proxy_common(),
        "    proxy_set_header Host $http_host;",
        "    proxy_set_header X-Forwarded-For $remote_addr;",
        "    proxy_request_buffering on;",
        *(f"    {line}" for line in response_buffering(settings)),
        "    proxy_connect_timeout 5s;",
        f"    proxy_read_timeout {settings.timeout_s}s;",
        f"    proxy_send_timeout {settings.timeout_s}s;",
        "}",
    ]


def response_buffering(settings: Settings) -> list[str]:
    """``response_buffer_bytes`` of memory per connection (64 KiB for the first part, the
    rest in 64 KiB buffers), then a temp file of at most ``response_spill_bytes``."""
    count = max(3, (settings.response_buffer_bytes - BUFFER) // BUFFER)
    busy = min(16, count - 1) * BUFFER  # nginx: less than all buffers minus one
    return [
        "proxy_buffering on;",
        f"proxy_buffer_size {BUFFER // 1024}k;",
        f"proxy_buffers {count} {BUFFER // 1024}k;",
        f"proxy_busy_buffers_size {busy // 1024}k;",
        f"proxy_max_temp_file_size {settings.response_spill_bytes // 1024}k;",
    ]


def _sidecar_location(path: str) -> list[str]:
    """``path`` answered by the supervisor (``frontend.sidecar``)."""
    return [
        f"location = {path} {{",
        "    proxy_pass http://smserve_supervisor;",
        *_proxy_common(),
        "    proxy_connect_timeout 2s;",
        f"    proxy_read_timeout {SIDECAR_TIMEOUT_S}s;",
        "}",
    ]


def _proxy_common() -> list[str]:
    return [
        "    proxy_http_version 1.1;",
        '    proxy_set_header Connection "";',
        "    proxy_next_upstream off;",
    ]


def _log_level(settings: Settings) -> str:
    """nginx's level for ours. Not ``warn`` below debug: nginx warns about every body or
    answer that goes to a temp file, which bounded buffers make routine."""
    return {"debug": "info", "critical": "crit"}.get(settings.log_level, "error")


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]
