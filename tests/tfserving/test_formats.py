"""Sans-IO building blocks: JSON parsing, float text, error quoting, routes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from smserve.errors import InvalidInput
from smserve.tfserving.debugjson import debug_string, format_double
from smserve.tfserving.floats import format_float, format_floats
from smserve.tfserving.jsonparse import parse_document
from smserve.tfserving.routes import Route, is_api_path, parse_route

# The float formatting table of the reference (§1.5), float32 unless marked.
FLOAT_TABLE = [
    (9000000, np.float32, "9e+06"),
    (999999, np.float32, "999999.0"),
    (0.5, np.float32, "0.5"),
    (0.0003, np.float32, "0.0003"),
    (0.00003, np.float32, "3e-05"),
    (555557.5, np.float32, "555557.5"),
    (42, np.float32, "42.0"),
    (1 / 3, np.float32, "0.333333343"),
    (1 / 3, np.float64, "0.33333333333333331"),
    (1435774380, np.float32, "1.43577434e+09"),
    (-0.0, np.float32, "-0.0"),
    (6e-7, np.float32, "6e-07"),
    (1234567, np.float32, "1234567.0"),
    (math.nan, np.float32, "NaN"),
    (math.inf, np.float32, "Infinity"),
    (-math.inf, np.float32, "-Infinity"),
]


@pytest.mark.parametrize(("value", "dtype", "text"), FLOAT_TABLE, ids=[t[2] for t in FLOAT_TABLE])
def test_float_text_matches_tf_serving(value: float, dtype: type, text: str) -> None:
    assert format_float(value, dtype) == text


def test_float_text_of_an_array_matches_the_scalar_rule() -> None:
    values = np.random.default_rng(3).normal(size=(50, 4)).astype(np.float32) * 1000
    texts = format_floats(values)
    assert texts.shape == values.shape
    for value, text in zip(values.ravel(), texts.ravel(), strict=True):
        short = f"{float(value):g}"
        expected = short if np.float32(float(short)) == value else f"{float(value):.9g}"
        expected += "" if "." in expected or "e" in expected else ".0"
        assert text == expected
        assert np.float32(float(text)) == value


PARSE_TABLE: list[tuple[bytes, Any]] = [
    (b'{"a": [1, 2.5]}', {"a": [1, 2.5]}),
    (b'{"a": 1} trailing garbage', {"a": 1}),
    (b'{"a": 1}{"b": 2}', {"a": 1}),
    (b"  [1]  ", [1]),
    (b'{"a": "Inf NaN", "b": Inf, "c": -Inf, "d": -Infinity, "e": Infinity}', None),
]


@pytest.mark.parametrize(
    ("body", "expected"), PARSE_TABLE, ids=[b.decode() for b, _ in PARSE_TABLE]
)
def test_parser_is_lenient_like_rapidjson(body: bytes, expected: Any) -> None:
    value = parse_document(body).value
    if expected is None:
        assert value["a"] == "Inf NaN"
        assert (value["b"], value["c"], value["d"], value["e"]) == (
            math.inf,
            -math.inf,
            -math.inf,
            math.inf,
        )
    else:
        assert value == expected


def test_parser_reads_nan_tokens() -> None:
    value = parse_document(b"[NaN, -NaN]").value
    assert all(math.isnan(v) for v in value)


PARSE_ERRORS = [
    (b"", "JSON Parse error: The document is empty"),
    (b"   ", "JSON Parse error: The document is empty. at offset: 3"),
    (b"{", "JSON Parse error: Missing a name for object member. at offset: 1"),
    (b'{"a" 1}', "JSON Parse error: Missing a colon after a name of object member. at offset: 5"),
    (b'{"a": x}', "JSON Parse error: Invalid value. at offset: 6"),
    (
        b'{"a": 1 "b": 2}',
        "JSON Parse error: Missing a comma or '}' after an object member. at offset: 8",
    ),
    (b"[1 2]", "JSON Parse error: Missing a comma or ']' after an array element. at offset: 3"),
    (b'{"a": 1.}', "JSON Parse error: Miss fraction part in number. at offset: 8"),
    (b'{"a": "x', "JSON Parse error: Missing a closing quotation mark in string. at offset: 8"),
]


@pytest.mark.parametrize(("body", "message"), PARSE_ERRORS, ids=[m for _, m in PARSE_ERRORS])
def test_parse_errors_carry_rapidjson_messages(body: bytes, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_document(body)
    assert caught.value.message == message


def test_parser_flags_bool_tokens() -> None:
    assert parse_document(b'{"a": true}').has_bool_tokens
    assert not parse_document(b'{"a": 1}').has_bool_tokens


DEBUG_TABLE: list[tuple[Any, str]] = [
    ([1, 2.0, "x", None, True], '[1, 2.0, "x", null, true]'),
    ({"a": [1]}, '{\n    "a": [1]\n}'),
    ({"a": {"b": 1}}, '{\n    "a": {\n        "b": 1\n    }\n}'),
    ([1.0, math.nan, 2.0], "[1.0, "),
    ("tab\there", '"tab\\there"'),
]


@pytest.mark.parametrize(("value", "text"), DEBUG_TABLE, ids=[t for _, t in DEBUG_TABLE])
def test_debug_string_is_rapidjsons_pretty_text(value: Any, text: str) -> None:
    assert debug_string(value) == text


def test_debug_string_stops_after_256_bytes() -> None:
    text = debug_string(list(range(1000)))
    assert 256 <= len(text) < 270
    assert not text.endswith("]")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (1e21, "1e21"),
        (1e20, "100000000000000000000.0"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (-2.5e-10, "-2.5e-10"),
    ],
)
def test_doubles_in_error_text_use_rapidjson_digits(value: float, text: str) -> None:
    assert format_double(value) == text


ROUTES = [
    ("POST", "/v1/models/m:predict", Route("predict", "m")),
    ("POST", "/v1/models/m/versions/3:classify", Route("classify", "m", 3)),
    ("POST", "/v1/models/m/labels/stable:regress", Route("regress", "m", label="stable")),
    ("POST", "/V1/MODELS/m:predict", Route("predict", "m")),
    ("POST", "/v1/models/m:PREDICT", Route("malformed", "m")),
    ("POST", "/v1/models/a%2Fb:predict", Route("predict", "a/b")),
    ("POST", "/v1/models/m:explain", Route("malformed")),
    ("POST", "/v1/models/m", Route("malformed")),
    ("GET", "/v1/models/m", Route("status", "m")),
    ("GET", "/v1/models", Route("status", "")),
    ("GET", "/v1/models/m/versions/7", Route("status", "m", 7)),
    ("GET", "/v1/models/m/labels/canary", Route("status", "m", label="canary")),
    ("GET", "/v1/models/m/metadata", Route("metadata", "m")),
    ("GET", "/v1/models/m/versions/2/metadata", Route("metadata", "m", 2)),
    ("GET", "/v1/models/m/METADATA", Route("status", "m")),
    ("GET", "/v1/models/m/other", Route("malformed")),
    ("GET", "/v1/models/", Route("malformed")),
    ("GET", "/v1/models/m:predict", Route("malformed")),
    ("PUT", "/v1/models/m", Route("malformed")),
    ("DELETE", "/v1/models/m", Route("malformed")),
]


@pytest.mark.parametrize(
    ("method", "path", "route"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES]
)
def test_routes_follow_tf_servings_grammar(method: str, path: str, route: Route) -> None:
    parsed = parse_route(method, path)
    if route.action == "malformed":
        assert parsed.action == "malformed"
    else:
        assert parsed == route


def test_a_version_beyond_int64_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_route("GET", "/v1/models/m/versions/18446744073709551615")
    assert caught.value.message == "Failed to convert version: 18446744073709551615 to numeric."


@pytest.mark.parametrize(
    ("path", "owned"), [("/v1/x", True), ("/V1/models", True), ("/v1", False), ("/v2/x", False)]
)
def test_api_paths(path: str, owned: bool) -> None:
    assert is_api_path(path) is owned
