"""Every answer nginx gives itself, as the JSON envelope the doors use: nginx's own status ->
(status sent, message), and the nginx lines that serve them.

Each status gets an ``error_page`` that redirects to an internal location returning the
envelope of the door whose paths the request was for (``DoorSpec.nginx_locations``): the
default door's (the first of ``smserve.door_table``) everywhere else, each other envelope
under a prefix of its own (``envelope_prefix``). Error pages are internal URIs, not named
locations: nginx cannot redirect a request whose request line it could not parse (no URI yet)
to a named location. An oversized header (nginx's internal 494) is answered 431."""

from __future__ import annotations

from smserve import door_table
from smserve.config import SERVER_PREFIX, Settings
from smserve.door_table import default_envelope
from smserve.doors import Envelope
from smserve.errors import PayloadTooLarge
from smserve.media import JSON

ERROR_PREFIX = f"{SERVER_PREFIX}error/"
HEADER_BUFFER = "8k"  # one request line or header line; four of them for all the headers
RETRY_AFTER = "add_header Retry-After 1 always; "  # on nginx's own 503: the queue is full
_UNQUOTABLE = ("'", "$", "\\")  # cannot appear in a single-quoted nginx string literally


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


def error_page_lines(settings: Settings, prefix: str) -> list[str]:
    """``error_page`` directives sending each status to its page under ``prefix``."""
    return [f"error_page {code} ={sent} {prefix}{code};" for code, (sent, _) in _pages(settings)]


def envelope_prefix(envelope: Envelope) -> str:
    """Where ``envelope``'s pages live: the default door's at ERROR_PREFIX, each other
    envelope in a folder named after it."""
    if envelope == default_envelope():
        return ERROR_PREFIX
    return f"{ERROR_PREFIX}{envelope.name}/"


def envelopes() -> list[Envelope]:
    """Every envelope nginx answers in: the default door's, then each door's own (once)."""
    found = [default_envelope()]
    for door in door_table.DOORS:
        if door.nginx_locations and door.envelope is not None and door.envelope not in found:
            found.append(door.envelope)
    return found


def error_locations(settings: Settings) -> list[str]:
    """The internal locations of every envelope."""
    return [line for envelope in envelopes() for line in _locations(settings, envelope)]


def _locations(settings: Settings, envelope: Envelope) -> list[str]:
    prefix = envelope_prefix(envelope)
    return [
        f"location = {prefix}{code} {{ internal; default_type {JSON}; "
        f"{RETRY_AFTER if sent == 503 else ''}return {sent} '{_page_body(envelope, message)}'; }}"
        for code, (sent, message) in _pages(settings)
    ]


def _pages(settings: Settings) -> list[tuple[int, tuple[int, str]]]:
    return sorted(error_pages(settings).items())


def _page_body(envelope: Envelope, message: str) -> str:
    _check_quotable(message)
    return envelope.body(message).decode()


def _check_quotable(message: str) -> None:
    if any(char in message for char in _UNQUOTABLE):
        raise ValueError(f"an nginx error message cannot contain {_UNQUOTABLE}: {message!r}")
