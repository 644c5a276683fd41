"""nginx's configuration for serving, rendered from Settings.

What each part is for:

* ``client_header_timeout`` / ``client_body_timeout``: a client whose headers are not complete
  in time, or whose body stalls longer than allowed, is dropped (nginx closes a stalled-header
  connection without an answer and answers a stalled body 408), so it never reaches gunicorn.
* ``proxy_request_buffering on`` with ``client_body_buffer_size`` = the payload limit: the
  whole body is read, in memory, before gunicorn sees the request; chunked bodies arrive there
  with a Content-Length. ``client_max_body_size`` answers 413 over the limit.
* The upstream is gunicorn on a unix socket with keep-alive (HTTP/1.1, ``Connection ""``).
  Its idle timeout is shorter than gunicorn's keep-alive, so nginx never reuses a connection
  gunicorn is closing.
* Every answer nginx gives itself is a JSON envelope (an ``error_page`` per status, served by
  an internal location), never an HTML page: the SageMaker door's ``{"error", "message"}``,
  and under TF Serving's ``/v1/`` and V2's ``/v2`` those protocols' ``{"error"}``. An oversized
  header (nginx's internal 494) is answered 431 Request Header Fields Too Large.
* Responses are buffered (in memory, then in the run directory), so a client that reads
  slowly holds an nginx buffer, not a gunicorn worker.
* The queue bound (``SMSERVE_MAX_QUEUED_REQUESTS``): ``limit_conn`` counts the POSTs in
  progress (GETs such as /ping have an empty key, so are never counted or refused); past one
  per request thread plus the bound, nginx answers 503 with ``Retry-After`` at once instead of
  queueing the request behind the others.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from smserve.config import Settings
from smserve.errors import PayloadTooLarge

UPSTREAM_IDLE_S = 50  # nginx drops idle upstream connections after this; gunicorn keeps longer
# Error pages are internal URIs, not named locations: nginx cannot redirect a request whose
# request line it could not parse (no URI yet) to a named location.
ERROR_PREFIX = "/_smserve/error/"
PLAIN_ERROR_PREFIX = "/_smserve/error/plain/"  # {"error"} only: TF Serving's and V2's envelope
# The doors whose envelope is {"error"}: TF Serving matches /v1/ case-insensitively.
PLAIN_ENVELOPE_LOCATIONS = ("~* ^/v1/", "/v2")
RETRY_AFTER = "add_header Retry-After 1 always; "  # on nginx's own 503: the queue is full
HEADER_BUFFER = "8k"  # one request line or header line; four of them for all the headers
_NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
_UNQUOTABLE = ("'", "$", "\\")  # cannot appear in a single-quoted nginx string literally


def find_nginx() -> str | None:
    """The nginx executable: on PATH, or where Debian and source builds put it."""
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
    def config_file(self) -> Path:
        return self.run_dir / "nginx.conf"

    @property
    def temp_dir(self) -> Path:
        return self.run_dir / "nginx"


def error_pages(settings: Settings) -> dict[int, tuple[int, str]]:
    """nginx's own status -> (status sent, message) for every error nginx answers itself."""
    header_s, body_s = settings.client_header_timeout_s, settings.client_body_timeout_s
    return {
        400: (
            400,
            "malformed HTTP request: the request line, a header or the chunked body is "
            "invalid (look for control characters, NUL bytes or bad header syntax)",
        ),
        404: (404, "no such route"),
        405: (405, "this method is not allowed"),
        408: (
            408,
            f"the request did not arrive in time: send the headers within {header_s} s "
            f"(SMSERVE_CLIENT_HEADER_TIMEOUT_S) and never pause a body for more than "
            f"{body_s} s (SMSERVE_CLIENT_BODY_TIMEOUT_S)",
        ),
        413: (413, PayloadTooLarge.over(settings.max_payload_bytes).message),
        414: (414, f"the request line is too long: it must fit in {HEADER_BUFFER}B"),
        494: (
            431,
            f"request headers too large: each header line must fit in {HEADER_BUFFER}B "
            f"and all of them in 4 x {HEADER_BUFFER}B",
        ),
        500: (500, "internal server error"),
        # A bad Transfer-Encoding or HTTP version is the client's mistake: 400, not nginx's
        # 501/505, so that bad input never costs a 5xx (a client retrying on 5xx would loop).
        501: (400, "unsupported Transfer-Encoding: send a Content-Length or chunked body"),
        502: (
            502,
            "the model server is not answering (starting, restarting or overloaded); "
            "retry the request",
        ),
        503: (
            503,
            "the server is at its limit of queued requests (SMSERVE_MAX_QUEUED_REQUESTS); "
            "retry the request after Retry-After seconds",
        ),
        504: (
            504,
            f"the model server did not answer within {settings.timeout_s} s "
            "(SAGEMAKER_MODEL_SERVER_TIMEOUT)",
        ),
        505: (400, "HTTP version not supported: use HTTP/1.1 or HTTP/1.0"),
    }


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


def _main_context(settings: Settings, layout: ProxyLayout, as_root: bool) -> list[str]:
    user = ["user nobody nogroup;"] if as_root and _has_nogroup() else []
    return [
        "daemon off;",
        "master_process on;",
        "worker_processes 1;",
        *user,
        f"pid {layout.run_dir / 'nginx.pid'};",
        f"error_log stderr {_log_level(settings)};",
        f"worker_shutdown_timeout {settings.graceful_timeout_s}s;",
        f"events {{ worker_connections {worker_connections(settings)}; multi_accept on; }}",
    ]


def _http_context(settings: Settings, layout: ProxyLayout) -> list[str]:
    temp = layout.temp_dir
    return [
        "access_log off;",
        "server_tokens off;",
        "sendfile off;",
        "tcp_nodelay on;",
        "default_type application/json;",
        *(f"{kind}_temp_path {temp / kind};" for kind in ("client_body", "proxy")),
        *(f"{kind}_temp_path {temp / kind};" for kind in ("fastcgi", "uwsgi", "scgi")),
        *_queue_zone(settings),
        "upstream smserve_gunicorn {",
        f"    server unix:{layout.upstream_socket} max_fails=0;",
        f"    keepalive {max(8, 4 * settings.workers * settings.threads)};",
        f"    keepalive_timeout {UPSTREAM_IDLE_S}s;",
        "    keepalive_requests 1000000;",
        "}",
    ]


def _server(settings: Settings) -> list[str]:
    plain = _error_page_lines(settings, PLAIN_ERROR_PREFIX)
    doors = [_proxy_location(settings, match, plain) for match in PLAIN_ENVELOPE_LOCATIONS]
    return [
        "server {",
        *_indent(_server_settings(settings)),
        *_indent(_proxy_location(settings, "/")),
        *(line for location in doors for line in _indent(location)),
        *_indent(_error_locations(settings, ERROR_PREFIX, _envelope)),
        *_indent(_error_locations(settings, PLAIN_ERROR_PREFIX, _plain_envelope)),
        "}",
    ]


def _error_page_lines(settings: Settings, prefix: str) -> list[str]:
    return [f"error_page {code} ={sent} {prefix}{code};" for code, (sent, _) in _pages(settings)]


def _server_settings(settings: Settings) -> list[str]:
    limit = settings.max_payload_bytes
    return [
        f"listen {settings.bind_host}:{settings.port} backlog=4096;",
        f"client_header_timeout {settings.client_header_timeout_s}s;",
        f"client_body_timeout {settings.client_body_timeout_s}s;",
        f"client_max_body_size {limit};",
        f"client_body_buffer_size {limit};",
        f"large_client_header_buffers 4 {HEADER_BUFFER};",
        f"keepalive_timeout {settings.keep_alive_s}s;",
        f"keepalive_requests {settings.keepalive_requests};",
        f"send_timeout {settings.timeout_s}s;",
        "underscores_in_headers on;",
        "lingering_close on;",
        *_queue_limit(settings),
        *_error_page_lines(settings, ERROR_PREFIX),
    ]


def queue_limit(settings: Settings) -> int:
    """POSTs in progress at most: one per request thread, plus the queue bound (0: none)."""
    if not settings.max_queued_requests:
        return 0
    return settings.workers * settings.threads + settings.max_queued_requests


def _queue_zone(settings: Settings) -> list[str]:
    if not queue_limit(settings):
        return []
    return [
        "map $request_method $smserve_queue_key { POST queue; default ''; }",
        "limit_conn_zone $smserve_queue_key zone=smserve_queue:1m;",
    ]


def _queue_limit(settings: Settings) -> list[str]:
    limit = queue_limit(settings)
    return [f"limit_conn smserve_queue {limit};", "limit_conn_status 503;"] if limit else []


def _proxy_location(settings: Settings, match: str, extra: Sequence[str] = ()) -> list[str]:
    """Proxy ``match`` to gunicorn; ``extra``: the location's own directives."""
    return [
        f"location {match} {{",
        *(f"    {line}" for line in extra),
        "    proxy_pass http://smserve_gunicorn;",
        "    proxy_http_version 1.1;",
        '    proxy_set_header Connection "";',
        "    proxy_set_header Host $http_host;",
        "    proxy_set_header X-Forwarded-For $remote_addr;",
        "    proxy_request_buffering on;",
        "    proxy_buffering on;",
        "    proxy_buffer_size 64k;",
        "    proxy_buffers 256 64k;",  # up to 16 MiB of answer in memory, as needed
        "    proxy_busy_buffers_size 1m;",
        "    proxy_connect_timeout 5s;",
        f"    proxy_read_timeout {settings.timeout_s}s;",
        f"    proxy_send_timeout {settings.timeout_s}s;",
        "    proxy_next_upstream off;",
        "}",
    ]


def _error_locations(settings: Settings, prefix: str, envelope: Callable[[str], str]) -> list[str]:
    return [
        f"location = {prefix}{code} {{ internal; default_type application/json; "
        f"{RETRY_AFTER if sent == 503 else ''}return {sent} '{envelope(message)}'; }}"
        for code, (sent, message) in _pages(settings)
    ]


def _pages(settings: Settings) -> list[tuple[int, tuple[int, str]]]:
    return sorted(error_pages(settings).items())


def _envelope(message: str) -> str:
    _check_quotable(message)
    return json.dumps({"error": message, "message": message})


def _plain_envelope(message: str) -> str:
    _check_quotable(message)
    return json.dumps({"error": message})


def _check_quotable(message: str) -> None:
    if any(char in message for char in _UNQUOTABLE):
        raise ValueError(f"an nginx error message cannot contain {_UNQUOTABLE}: {message!r}")


def _log_level(settings: Settings) -> str:
    return "info" if settings.log_level == "debug" else "warn"


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _has_nogroup() -> bool:
    import grp

    try:
        grp.getgrnam("nogroup")
    except KeyError:
        return False
    return True
