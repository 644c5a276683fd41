"""gunicorn's gthread worker, answering the errors gunicorn raises itself in our JSON envelope.

An unknown Transfer-Encoding is a 400 here, not gunicorn's 501 (as behind nginx): bad input
never costs a 5xx.

gunicorn answers a request it cannot parse (a NUL byte in a header, a request line or header
over its limits, a bad chunked body) with an HTML page of its own, before any app runs. Behind
nginx such requests never reach it (nginx refuses them first, in JSON); with gunicorn alone
this worker writes the default door's envelope (``smserve.door_table``: no path is known yet),
then closes the connection as gunicorn does."""

from __future__ import annotations

from http import HTTPStatus
from socket import socket
from typing import Any

from gunicorn.http import errors as parse_errors
from gunicorn.util import write_nonblock
from gunicorn.workers.gthread import ThreadWorker

from smserve.door_table import default_envelope
from smserve.http import listeners, whole_body
from smserve.media import JSON

_STATUS_BY_ERROR: tuple[tuple[type[Exception], HTTPStatus], ...] = (
    (parse_errors.LimitRequestLine, HTTPStatus.REQUEST_URI_TOO_LONG),
    (parse_errors.LimitRequestHeaders, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE),
    (parse_errors.ExpectationFailed, HTTPStatus.EXPECTATION_FAILED),
    (parse_errors.ForbiddenProxyRequest, HTTPStatus.FORBIDDEN),
)


class JsonErrorWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """``ThreadWorker`` whose own error answers are JSON, whose Content-Length bodies are read
    whole in one ``recv`` (``whole_body``), and that stops the app's other listeners
    (``http.listeners``: the gRPC door) with HTTP."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stopping = listeners.Stopping()

    def handle_exit(self, sig: int, frame: Any) -> None:
        """SIGTERM: the other listeners stop taking requests too, while HTTP drains."""
        self.stopping.begin(self.app.listeners)
        super().handle_exit(sig, frame)

    def run(self) -> None:
        """Serve until stopped, then wait for the other listeners' in-flight requests, within
        the graceful timeout from the stop."""
        super().run()
        self.stopping.wait(self.app.listeners, self.cfg.graceful_timeout, self.log)

    def handle_request(self, req: Any, conn: Any) -> Any:
        whole_body.install(req)
        return super().handle_request(req, conn)

    def handle_error(self, req: Any, client: socket, addr: Any, exc: Exception) -> None:
        status = error_status(exc)
        if status == HTTPStatus.INTERNAL_SERVER_ERROR:
            self.log.exception("error handling a request")
            message = "internal server error"
        else:
            self.log.warning("invalid request from %s: %s", (addr or ("",))[0], exc)
            message = f"malformed HTTP request: {exc}"
        try:
            write_nonblock(client, error_bytes(status, message))
        except OSError:
            self.log.debug("failed to send an error answer")


def error_status(exc: Exception) -> HTTPStatus:
    """The status gunicorn gives a parse error (its own mapping), 500 for anything else."""
    if isinstance(exc, parse_errors.InvalidResponseHeader | parse_errors.InvalidResponseHeaderName):
        return HTTPStatus.INTERNAL_SERVER_ERROR  # the app's header, not the client's fault
    for kind, status in _STATUS_BY_ERROR:
        if isinstance(exc, kind):
            return status
    if isinstance(exc, parse_errors.ParseException):
        return HTTPStatus.BAD_REQUEST
    return HTTPStatus.INTERNAL_SERVER_ERROR


def error_bytes(status: HTTPStatus, message: str) -> bytes:
    """A whole HTTP/1.1 answer: the envelope, ``Connection: close``."""
    body = default_envelope().body(message)
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\nConnection: close\r\n"
        f"Content-Type: {JSON}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body
