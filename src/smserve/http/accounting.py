"""Every request a door answers, counted in the metrics; at debug level, one log line each.

Counting happens on every request, so it is a handful of dictionary operations under one lock
(``Metrics.finish``). Label values are bounded (``metrics.serving``): the request's format is
its Content-Type only when the server reads that format, and a request for a model that does
not exist (404) counts without the name it asked for.

Requests a door counts under an API name (``DoorReply.verb``) are also counted in the names
of every door whose description carries ``metric_names`` (TF Serving's).

The debug line (``AccessLog``, installed only at debug level, so it costs nothing otherwise)
names what an operator looks for: the caller's request id (the default door's
``request_id_header``: what SageMaker's Data Capture records), the model that answered, the
status and the time taken."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from smserve import door_table
from smserve.door_table import DEFAULT
from smserve.doors import DoorReply, DoorRequest, DoorSpec
from smserve.media import READABLE, canonical
from smserve.metrics import Answered, Metrics, ProtocolNames

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

logger = logging.getLogger("smserve.access")

MODEL_KEY = "smserve.model"  # the environ key where the answering model's name is left
OTHER_FORMAT = "other"
_MAX_FORMATS = 256
_formats: dict[str, str] = {}  # Content-Type header -> format label, for the common ones


class _Seen:
    """The table last seen, and its doors' metric names."""

    doors: tuple[DoorSpec, ...] | None = None
    names: tuple[ProtocolNames, ...] = ()


def finish(
    metrics: Metrics,
    door: str,
    request: DoorRequest,
    reply: DoorReply,
    started: float,
    environ: WSGIEnvironment,
) -> None:
    """Count ``reply`` to ``request`` (``metrics.begin()`` was called at ``started``)."""
    status = reply.status
    model = "" if status == HTTPStatus.NOT_FOUND else reply.model
    key = (door, model, format_label(request.headers.get("Content-Type")), status)
    answered = Answered(
        key,
        time.perf_counter() - started,
        (len(request.body), len(reply.body)),
        reply.stages,
        reply.verb or "",
        reply.model,
    )
    metrics.finish(answered, () if reply.verb is None else protocol_names())
    environ[MODEL_KEY] = reply.model


def protocol_names() -> tuple[ProtocolNames, ...]:
    """The doors' metric names (``door_table.metric_names``), found again only when the
    table is another one (a test's)."""
    doors = door_table.DOORS
    if _Seen.doors is not doors:
        _Seen.names, _Seen.doors = door_table.metric_names(), doors
    return _Seen.names


def format_label(content_type: str | None) -> str:
    """The request's format as the metrics label it: a format the server reads, ``other``,
    or empty without a Content-Type."""
    if not content_type:
        return ""
    label = _formats.get(content_type)
    if label is None:
        essence = canonical(content_type.partition(";")[0])
        label = essence if essence in READABLE else OTHER_FORMAT
        if len(_formats) < _MAX_FORMATS:
            _formats[content_type] = label
    return label


class AccessLog:
    """WSGI middleware: one debug line per request, once its answer has started."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        status: list[str] = []

        def start(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status.append(code)
            return start_response(code, headers, exc_info)

        try:
            return self.app(environ, start)
        finally:
            _log(environ, status[0].partition(" ")[0] if status else "-", started)


def _log(environ: WSGIEnvironment, status: str, started: float) -> None:
    model = environ.get(MODEL_KEY) or _header(environ, DEFAULT.model_header) or "-"
    logger.debug(
        "%s %s %s %.2f ms model=%s inference_id=%s",
        environ.get("REQUEST_METHOD", "-"),
        environ.get("RAW_URI") or environ.get("PATH_INFO", "-"),
        status,
        (time.perf_counter() - started) * 1000,
        model,
        _header(environ, DEFAULT.request_id_header) or "-",
    )


def _header(environ: WSGIEnvironment, header: str | None) -> str | None:
    if header is None:
        return None
    value = environ.get("HTTP_" + header.upper().replace("-", "_"))
    return value if isinstance(value, str) else None
