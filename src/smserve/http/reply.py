"""The one function that writes every answer: a DoorReply as a WSGI status line, headers and
body. Successes, a door's errors, 404, 405, 413 and the server's own pages all come through
``write``, so no answer has a format of its own.

Headers, in this order: ``Content-Type`` (none when the reply has no content type: an empty
body), ``Content-Length`` (none on a 1xx or 204, which carry no body), the reply's own headers,
and ``X-Model-Version`` on a success that names its version. A HEAD answer has the headers of
the GET and no body. Errors no door owns are written in the default door's envelope
(``failure_reply``)."""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING

from smserve.door_table import default_envelope
from smserve.doors import DoorReply
from smserve.failures import Failure
from smserve.media import JSON

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse

VERSION_HEADER = "X-Model-Version"
_STATUS_LINES = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}


def write(reply: DoorReply, start_response: StartResponse, method: str) -> list[bytes]:
    """Start the answer for ``reply`` to a ``method`` request; its body, to be sent."""
    status = reply.status
    headers = [] if reply.content_type is None else [("Content-Type", reply.content_type)]
    bodiless = status < HTTPStatus.OK or status == HTTPStatus.NO_CONTENT
    if not bodiless:
        headers.append(("Content-Length", str(len(reply.body))))
    headers.extend(reply.headers)
    if reply.version is not None and status < HTTPStatus.MULTIPLE_CHOICES:
        headers.append((VERSION_HEADER, str(reply.version)))
    start_response(status_line(status), headers)
    return [] if bodiless or method == "HEAD" or status == HTTPStatus.NOT_MODIFIED else [reply.body]


def status_line(status: int) -> str:
    """``404 Not Found``; a status HTTP does not name gets a generic reason."""
    return _STATUS_LINES.get(status) or f"{status} {'Error' if status >= 400 else 'Status'}"


def failure_reply(failure: Failure, headers: tuple[tuple[str, str], ...] = ()) -> DoorReply:
    """``failure`` in the default door's envelope."""
    return DoorReply(failure.status, default_envelope().body(failure.message), JSON, headers)
