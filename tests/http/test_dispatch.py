"""``http.dispatch``: the one request path. Every request of the app, through the dispatcher
called as a WSGI app: found in the door table, 404 and 405 (with Allow) in the default door's
envelope, bodies within the limit (413, chunked, a client gone), 503 while the models load on
every route that waits, counted unless the route is not, and nothing unexpected ever a
traceback."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import EnvironBuilder

from smserve.config import Settings
from smserve.doors import DoorReply, DoorRequest
from smserve.failures import INTERNAL_ERROR_MESSAGE
from smserve.http import context
from smserve.http.app import create_app, dispatcher_of
from smserve.http.dispatch import Dispatcher
from smserve.http.draining import UNREADABLE
from smserve.http.rules import Table, Target
from smserve.media import JSON, TEXT
from tests.fakes import EchoAlgorithm, FailingAlgorithm, fake_service

ROWS = b"1,2\n3,4\n"
Answer = tuple[str, dict[str, str], bytes, dict[str, Any]]


def call(wsgi: Callable[..., Any], method: str, path: str, **kwargs: Any) -> Answer:
    overrides = kwargs.pop("environ_overrides", {})
    environ: dict[str, Any] = EnvironBuilder(path=path, method=method, **kwargs).get_environ()
    environ.update(overrides)
    started: list[tuple[str, list[tuple[str, str]]]] = []
    body = b"".join(wsgi(environ, lambda status, headers: started.append((status, headers))))
    ((status, headers),) = started
    return status, dict(headers), body, environ


def error(body: bytes) -> str:
    found = json.loads(body)
    assert set(found) == {"error", "message"}  # the default door's envelope
    message: str = found["error"]
    return message


@pytest.fixture
def app(tmp_path: Any) -> Flask:
    settings = Settings(max_payload_bytes=16, runtime_dir=tmp_path)
    return create_app(settings, fake_service(EchoAlgorithm(), settings))


@pytest.fixture
def wsgi(app: Flask) -> Dispatcher:
    return dispatcher_of(app)


def counts(app: Flask) -> dict[str, float]:
    text = app.test_client().get("/metrics").get_data(as_text=True)
    found = (line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    return {name: float(value) for name, value in found if name.startswith("smserve_requests_t")}


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("POST", "/invocations", ROWS),  # exact
        ("POST", "/endpoints/e1/invocations", ROWS),  # a pattern
        ("GET", "/v1/models/model", None),  # a prefix
        ("POST", "/v2/models/model/infer", b'{"inputs": []}'),  # within the 16-byte limit
        ("GET", "/v2/models/model", None),
        ("GET", "/openapi.json", None),  # the app's own pages
        ("GET", "/metrics", None),
    ],
)
def test_every_route_is_answered_by_the_dispatcher(
    app: Flask, method: str, path: str, data: bytes | None
) -> None:
    status, headers, body, _ = call(app, method, path, data=data, content_type="text/csv")
    assert int(status[:3]) in (200, 400), body  # answered by the route, not a 404
    assert headers["Content-Length"] == str(len(body))


def test_a_success_is_written_as_the_door_replied(wsgi: Dispatcher) -> None:
    status, headers, body, _ = call(
        wsgi, "POST", "/invocations", data=ROWS, content_type="text/csv"
    )
    assert status == "200 OK"
    assert list(headers) == ["Content-Type", "Content-Length", "X-Model-Version"]
    assert json.loads(body) == {"predictions": [{"score": 3.0}, {"score": 7.0}]}


def test_an_unrouted_path_is_404_in_the_default_envelope(app: Flask, wsgi: Dispatcher) -> None:
    status, headers, body, _ = call(wsgi, "GET", "/predict")
    assert (status, headers["Content-Type"]) == ("404 Not Found", JSON)
    assert error(body) == "no such route: GET /predict"
    assert counts(app) == {}  # nothing a door answered


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("GET", "/invocations", "OPTIONS, POST"), ("POST", "/ping", "GET, HEAD, OPTIONS")],
)
def test_a_method_the_routes_do_not_take_is_405_with_allow(
    wsgi: Dispatcher, method: str, path: str, allowed: str
) -> None:
    status, headers, body, _ = call(wsgi, method, path)
    assert (status, headers["Allow"]) == ("405 Method Not Allowed", allowed)
    assert error(body) == f"{method} is not allowed on {path}; allowed: {allowed}"


def test_options_lists_what_a_route_allows_and_head_answers_as_get(wsgi: Dispatcher) -> None:
    status, headers, body, _ = call(wsgi, "OPTIONS", "/invocations")
    assert (status, headers, body) == (
        "200 OK",
        {"Content-Length": "0", "Allow": "OPTIONS, POST"},
        b"",
    )
    status, headers, body, _ = call(wsgi, "HEAD", "/openapi.json")
    assert (status, body) == ("200 OK", b"")
    assert int(headers["Content-Length"]) > 0


@pytest.mark.parametrize(
    ("path", "keys"),
    [("/invocations", {"error", "message"}), ("/v2/models/model/infer", {"error"})],
)
def test_a_body_over_the_limit_is_413_in_the_doors_envelope(
    app: Flask, path: str, keys: set[str]
) -> None:
    status, _, body, _ = call(app, "POST", path, data=b"1," * 9, content_type="text/csv")
    assert status.startswith("413 ")
    assert set(json.loads(body)) == keys
    assert "exceeds the 16-byte limit" in json.loads(body)["error"]


@pytest.mark.parametrize(("size", "status"), [(16, "200 OK"), (17, "413 Content Too Large")])
def test_a_chunked_body_is_read_to_one_byte_past_the_limit(
    wsgi: Dispatcher, size: int, status: str
) -> None:
    body = (b"1\n" * 9)[:size]
    overrides = {"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True}
    headers = {"Content-Type": "text/csv", "Transfer-Encoding": "chunked"}
    answer = call(wsgi, "POST", "/invocations", headers=headers, environ_overrides=overrides)
    assert answer[0][:3] == status[:3], answer[2]


def test_a_client_gone_mid_body_is_400_and_closes(wsgi: Dispatcher) -> None:
    headers = {"Content-Type": "text/csv"}
    overrides = {"wsgi.input": io.BytesIO(b"1,2\n"), "CONTENT_LENGTH": "12"}
    status, _, body, environ = call(
        wsgi, "POST", "/invocations", headers=headers, environ_overrides=overrides
    )
    assert status == "400 Bad Request"
    assert "could not be read completely" in error(body)
    assert environ[UNREADABLE] is True


@pytest.mark.parametrize(
    ("method", "path", "waits"),
    [
        ("POST", "/invocations", True),
        ("GET", "/ping", True),
        ("GET", "/v2/models/model", True),
        ("GET", "/v1/models/model", True),
        ("GET", "/metrics", False),
        ("GET", "/openapi.json", False),
        ("GET", "/monitoring/prometheus/metrics", False),
    ],
)
def test_routes_that_wait_are_503_before_the_models_load(
    app: Flask, method: str, path: str, waits: bool
) -> None:
    context.install(app, Settings(), None)
    status, _, body, _ = call(app, method, path, data=ROWS, content_type="text/csv")
    assert status.startswith("503 " if waits else "200 "), body
    if waits:
        assert "not loaded yet" in json.loads(body)["error"]


def test_counted_routes_are_counted_and_the_others_not(app: Flask) -> None:
    for _ in range(2):
        call(app, "POST", "/invocations", data=ROWS, content_type="text/csv")
    for path in ("/ping", "/nope", "/openapi.json"):
        call(app, "GET", path)
    call(app, "OPTIONS", "/invocations")
    call(app, "POST", "/invocations", data=b"1," * 9, content_type="text/csv")  # 413
    assert counts(app) == {
        'smserve_requests_total{door="sagemaker",model="model",format="text/csv",status="200"}': 2,
        'smserve_requests_total{door="sagemaker",model="model",format="text/csv",status="413"}': 1,
    }


def test_a_failing_handler_is_its_doors_500_without_the_detail(tmp_path: Any) -> None:
    settings = Settings(runtime_dir=tmp_path)
    app = create_app(settings, fake_service(FailingAlgorithm(), settings))
    status, _, body, _ = call(app, "POST", "/invocations", data=ROWS, content_type="text/csv")
    assert status == "500 Internal Server Error"
    assert error(body) == INTERNAL_ERROR_MESSAGE
    assert FailingAlgorithm.SECRET.encode() not in body


class _Door:
    """A door whose handler echoes what it was given and whose error reply itself fails."""

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        raise RuntimeError("the error reply failed too")

    def echo(self, request: DoorRequest) -> DoorReply:
        seen = {"path": request.path, "params": dict(request.params), "query": dict(request.query)}
        return DoorReply(200, json.dumps(seen).encode(), JSON)

    def fail(self, request: DoorRequest) -> DoorReply:
        raise ValueError("a bug")


def _dispatcher(app: Flask) -> Dispatcher:
    door, table = _Door(), Table()
    table.add(("GET",), "/echo/<path:rest>", Target("echo", door.echo, door, "test", False, False))
    table.add(("GET",), "/fail", Target("fail", door.fail, door, "test", False, False))
    table.add_prefix(
        re.compile("/echo/p/.*"), Target("p", lambda r: DoorReply(200, b"", TEXT), door, "")
    )
    return Dispatcher(table, context.serving_of(app), app.extensions, 16)


def test_a_route_gets_its_variables_decoded_the_raw_path_and_the_query(app: Flask) -> None:
    status, _, body, _ = call(
        _dispatcher(app), "GET", "/echo/p/caf%C3%A9", query_string="a=1&b=x%20y&a=2"
    )
    assert status == "200 OK"
    assert json.loads(body) == {
        "path": "/echo/p/caf%C3%A9",
        "params": {"rest": "p/café"},
        "query": {"a": "1", "b": "x y"},
    }


def test_whatever_escapes_a_door_is_a_500_in_the_default_envelope(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    status, _, body, _ = call(_dispatcher(app), "GET", "/fail")
    assert status == "500 Internal Server Error"
    assert error(body) == INTERNAL_ERROR_MESSAGE
    assert b"Traceback" not in body
    assert "the error reply failed too" in caplog.text
