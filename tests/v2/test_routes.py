"""The URL grammar under /v2: every route, and Triton's 404/405 for everything else."""

from __future__ import annotations

import pytest

from smserve.errors import InvalidInput
from smserve.v2.routes import Route, is_api_path, parse_route
from tests.v2.conftest import Call


@pytest.mark.parametrize(
    ("method", "path", "route"),
    [
        ("GET", "/v2", Route("server_metadata")),
        ("GET", "/v2/", Route("server_metadata")),
        ("GET", "/v2/health/live", Route("live")),
        ("GET", "/v2/health/ready", Route("ready")),
        ("GET", "/v2/models/km", Route("model_metadata", "km")),
        ("GET", "/v2/models/km/versions/3", Route("model_metadata", "km", 3)),
        ("GET", "/v2/models/km/ready", Route("model_ready", "km")),
        ("GET", "/v2/models/km/versions/3/ready", Route("model_ready", "km", 3)),
        ("POST", "/v2/models/km/infer", Route("infer", "km")),
        ("POST", "/v2/models/km/versions/12/infer", Route("infer", "km", 12)),
        ("POST", "/v2/models/a%2Fb%20c/infer", Route("infer", "a/b c")),
        ("POST", "/v2/models/km/ready", Route("method_not_allowed", "km", allowed="GET")),
        ("GET", "/v2/models/km/infer", Route("method_not_allowed", "km", allowed="POST")),
        ("PUT", "/v2/models/km", Route("method_not_allowed", "km", allowed="GET")),
        ("DELETE", "/v2/health/live", Route("method_not_allowed", allowed="GET")),
        ("HEAD", "/v2", Route("method_not_allowed", allowed="GET")),
        ("GET", "/v2/models", Route("not_found")),
        ("GET", "/v2/models/", Route("not_found")),
        ("GET", "/v2/models/km/versions/v1", Route("not_found")),
        ("GET", "/v2/models/km/versions/", Route("not_found")),
        ("POST", "/v2/models/km/predict", Route("not_found")),
        ("GET", "/v2/health", Route("not_found")),
        ("GET", "/v2/health/live/", Route("not_found")),
        ("GET", "/v2/repository/index", Route("not_found")),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_routes(method: str, path: str, route: Route) -> None:
    assert parse_route(method, path) == route


def test_a_version_beyond_int64_is_a_client_error() -> None:
    with pytest.raises(InvalidInput, match="out of range"):
        parse_route("GET", "/v2/models/km/versions/9223372036854775808")


@pytest.mark.parametrize(
    ("path", "owned"),
    [("/v2", True), ("/v2/", True), ("/v2/anything", True), ("/v21", False), ("/v1/models", False)],
)
def test_the_door_owns_v2_and_everything_under_it(path: str, owned: bool) -> None:
    assert is_api_path(path) is owned


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        ("GET", "/v2/nothing/here", 404, "Not Found"),
        ("GET", "/v2/models/km/versions/x", 404, "Not Found"),
        ("POST", "/v2/models/km", 405, "Method Not Allowed"),
        ("GET", "/v2/models/km/infer", 405, "Method Not Allowed"),
        ("PATCH", "/v2/health/ready", 405, "Method Not Allowed"),
        ("GET", "/v2/models/km/versions/99999999999999999999", 400, "out of range"),
    ],
)
def test_unknown_routes_answer_the_error_envelope(
    call: Call, method: str, path: str, status: int, message: str
) -> None:
    answer = call(method, path)
    assert answer.status == status
    assert answer.reply.content_type == "application/json"
    assert message in answer.error


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("POST", "/v2/models/km", "GET"), ("GET", "/v2/models/km/infer", "POST")],
)
def test_a_405_names_the_allowed_method(call: Call, method: str, path: str, allowed: str) -> None:
    """RFC 9110: a 405 carries Allow (schemathesis' unsupported-method check asks for it)."""
    answer = call(method, path)
    assert answer.status == 405
    assert dict(answer.reply.headers)["Allow"] == allowed
