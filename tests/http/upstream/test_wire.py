"""The upstream worker's request heads: the environ gunicorn builds for the same bytes, and
heads nginx never forwards refused rather than interpreted."""

from __future__ import annotations

import io
import socket
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser

from smserve.http.upstream import wire

SHARED = wire.constants(multiprocess=True)
# The keys an app reads, compared with gunicorn's environ for the same request.
COMPARED = (
    "REQUEST_METHOD",
    "PATH_INFO",
    "QUERY_STRING",
    "RAW_URI",
    "SERVER_PROTOCOL",
    "SERVER_NAME",
    "SERVER_PORT",
    "SCRIPT_NAME",
    "CONTENT_TYPE",
    "CONTENT_LENGTH",
    "wsgi.url_scheme",
)

HEADS = [
    b"POST /invocations HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: text/csv\r\n"
    b"Content-Length: 5",
    b"GET /ping HTTP/1.1\r\nHost: localhost",
    b"POST /v2/models/a%20b/infer?x=1&y=%2F HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"
    b"X-Amzn-SageMaker-Custom-Attributes: a=1\r\nAccept: text/csv\r\nAccept: application/json",
    b"POST /models/m/invoke HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Length: 2\r\n"
    b"X-Forwarded-For: 10.0.0.1\r\nX-Custom_Name: dropped\r\nUser-Agent: curl/8",
    b"GET /caf%C3%A9 HTTP/1.0\r\nHost: example",
    b"GET / HTTP/1.1",
    b"M-SEARCH /invocations HTTP/1.1\r\nHost: h",  # any method nginx forwards: the app says 405
    b"MY_METHOD /ping HTTP/1.1\r\nHost: h",
]


def gunicorn_environ(head: bytes) -> dict[str, Any]:
    """What gunicorn's parser and ``wsgi.create`` make of ``head`` on a unix socket."""
    server, client = socket.socketpair()
    with server, client:
        client.sendall(head + b"\r\n\r\n")
        cfg = Config()
        request = next(RequestParser(cfg, server, ""))
        _, environ = wsgi.create(request, server, "", "/run/gunicorn.sock", cfg)
    return dict(environ)


# Where gunicorn's SERVER_NAME is wrong: an IPv6 host cut at its first colon, and no Host at all
# (its socket's path). Ours for these is asserted below.
SERVER_FIXED = {HEADS[3]: ("[::1]", "8080"), HEADS[5]: ("localhost", "80")}


@pytest.mark.parametrize("head", HEADS, ids=lambda h: h.split(b"\r\n")[0].decode())
def test_the_environ_is_gunicorns(head: bytes) -> None:
    ours = wire.parse(head, SHARED).environ
    theirs = gunicorn_environ(head)
    if head in SERVER_FIXED:
        assert (ours["SERVER_NAME"], ours["SERVER_PORT"]) == SERVER_FIXED[head]
        theirs["SERVER_NAME"], theirs["SERVER_PORT"] = SERVER_FIXED[head]
    for key in COMPARED:
        assert ours.get(key) == theirs.get(key), key
    headers = {k: v for k, v in theirs.items() if k.startswith("HTTP_")}
    assert {k: v for k, v in ours.items() if k.startswith("HTTP_")} == headers


def test_repeated_headers_join_and_underscored_names_are_dropped() -> None:
    head = wire.parse(HEADS[2] + b"\r\nX_Amzn_Trick: 1", SHARED)
    assert head.environ["HTTP_ACCEPT"] == "text/csv,application/json"
    assert "HTTP_X_AMZN_TRICK" not in head.environ


def test_length_and_keep_alive() -> None:
    assert wire.parse(HEADS[0], SHARED).length == 5
    assert wire.parse(HEADS[1], SHARED).length == 0
    assert wire.parse(HEADS[1], SHARED).keep_alive
    assert not wire.parse(HEADS[1] + b"\r\nConnection: close", SHARED).keep_alive
    assert not wire.parse(HEADS[4], SHARED).keep_alive  # HTTP/1.0
    assert wire.parse(HEADS[4] + b"\r\nConnection: Keep-Alive", SHARED).keep_alive


@pytest.mark.parametrize(
    "head",
    [
        b"POST /invocations HTTP/1.1\nHost: x",  # a bare LF
        b"POST /invocations HTTP/1.1\r\nHost: x\ry",  # a bare CR
        b"POST /invocations HTTP/1.1\r\nHost: x\0",  # NUL
        b"POST /invocations HTTP/2.0\r\nHost: x",
        b"POST http://x/invocations HTTP/1.1\r\nHost: x",  # absolute form
        b"post /invocations HTTP/1.1\r\nHost: x",  # gunicorn refuses lower case, '#', and
        b"M#X /invocations HTTP/1.1\r\nHost: x",  # a method under 3 or over 20 characters
        b"GO /invocations HTTP/1.1\r\nHost: x",
        b"A_VERY_LONG_METHOD_NAME /invocations HTTP/1.1\r\nHost: x",
        b"POST  /invocations HTTP/1.1\r\nHost: x",
        b"POST /invocations HTTP/1.1\r\nBad Name: x",
        b"POST /invocations HTTP/1.1\r\nno colon",
        b"POST /invocations HTTP/1.1\r\nTransfer-Encoding: chunked",
        b"POST /invocations HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6",
        b"POST /invocations HTTP/1.1\r\nContent-Length: -1",
        b"POST /invocations HTTP/1.1\r\nContent-Length: 1e3",
    ],
)
def test_heads_nginx_never_forwards_are_refused(head: bytes) -> None:
    with pytest.raises(wire.HeadError):
        wire.parse(head, SHARED)


def test_the_environ_is_fresh_per_request() -> None:
    first = wire.parse(HEADS[0], SHARED).environ
    first["wsgi.input"] = io.BytesIO()
    assert "wsgi.input" not in wire.parse(HEADS[1], SHARED).environ
    assert "wsgi.input" not in SHARED


def test_the_answer_head_drops_hop_by_hop_headers_and_frames_itself() -> None:
    headers = [("Content-Type", "text/csv"), ("Connection", "keep-alive"), ("X-A", "1")]
    head = wire.answer_head("200 OK", headers, close=True, chunked=True)
    assert head == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nX-A: 1\r\nConnection: close\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    with pytest.raises(ValueError, match="CR or LF"):
        wire.answer_head("200 OK", [("X-A", "1\r\nX-B: 2")], close=False, chunked=False)


def test_which_answers_have_a_body() -> None:
    assert wire.may_have_body("200 OK", "POST")
    assert not wire.may_have_body("200 OK", "HEAD")
    assert not wire.may_have_body("204 No Content", "GET")
    assert not wire.may_have_body("304 Not Modified", "GET")
    assert not wire.may_have_body("100 Continue", "GET")
