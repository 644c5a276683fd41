"""media: Content-Type parsing and Accept negotiation (the style guide's table, and more)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smserve.errors import NotAcceptable, UnsupportedMediaType
from smserve.media import (
    CSV,
    JSON,
    JSONLINES,
    LIBSVM,
    RECORDIO,
    negotiate,
    parse_media_type,
    parse_parameters,
)

OFFERS = (JSON, JSONLINES, CSV, RECORDIO)
DEFAULT = CSV


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, CSV),
        ("", CSV),
        (" , ", CSV),
        ("*/*", CSV),
        ("*/*;q=0.8", CSV),
        ("application/json;verbose=True", JSON),
        ("text/csv; label_size=0", CSV),
        ("text/csv;q=0.5, application/json", JSON),
        ("text/*;q=0.9, application/jsonlines;q=0", CSV),
        ("application/json;q=0, */*", CSV),
        ("application/*", JSON),
        ("application/*;q=0.5, application/json;q=0", JSONLINES),
        ("Text/CSV", CSV),
        ("TEXT/*", CSV),
        ("text/csv, application/json", CSV),
        ("application/json, text/csv", JSON),
        ("application/jsonlines;q=0.9, application/json;q=0.8", JSONLINES),
        ("application/json;q=0.5, */*;q=0.5", JSON),
        ("image/png, */*;q=0.1", CSV),
        ("application/x-recordio-protobuf", RECORDIO),
        ("recordio-protobuf", RECORDIO),
        ("json", JSON),
        ("application/x-ndjson", JSONLINES),
        ("application/json ; q=1 ; verbose=true", JSON),
    ],
    ids=lambda value: repr(value),
)
def test_negotiate(accept: str | None, expected: str) -> None:
    assert negotiate(accept, OFFERS, DEFAULT) == expected


@pytest.mark.parametrize(
    ("accept", "message"),
    [
        ("image/png", "None of the types in Accept 'image/png' can be produced"),
        ("*/*;q=0", "can be produced; supported: application/json"),
        ("application/json;q=0", "can be produced"),
        ("text/html, image/*", "can be produced"),
        ("text/csv;q=abc", "has an invalid q-value"),
        ("text/csv;q=2", "q-value outside 0..1"),
    ],
    ids=lambda value: repr(value),
)
def test_negotiate_rejects(accept: str, message: str) -> None:
    with pytest.raises(NotAcceptable, match=message):
        negotiate(accept, OFFERS, DEFAULT)


@pytest.mark.parametrize("default", [JSON, JSONLINES, RECORDIO])
def test_missing_or_wildcard_accept_gets_the_default(default: str) -> None:
    assert negotiate(None, OFFERS, default) == default
    assert negotiate("*/*", OFFERS, default) == default


def test_default_breaks_ties_before_server_order() -> None:
    assert negotiate("application/*", OFFERS, JSONLINES) == JSONLINES


def test_default_is_canonicalised() -> None:
    # SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT may be written in any case or as an alias
    assert negotiate(None, OFFERS, "Application/JSON") == JSON
    assert negotiate("*/*", OFFERS, "jsonlines") == JSONLINES


@pytest.mark.parametrize(
    ("header", "essence", "params"),
    [
        ("text/csv", CSV, {}),
        ("Text/CSV; label_size=0", CSV, {"label_size": "0"}),
        ('text/csv; Label_Size="1"; charset=UTF-8', CSV, {"label_size": "1", "charset": "UTF-8"}),
        ("text/csv;", CSV, {}),
        ("application/JSON", JSON, {}),
        ("application/jsonlines", JSONLINES, {}),
        ("text/x-libsvm", LIBSVM, {}),
        ("libsvm", LIBSVM, {}),
        ("application/x-recordio-protobuf", RECORDIO, {}),
        ("application/octet-stream", "application/octet-stream", {}),
    ],
    ids=lambda value: repr(value),
)
def test_parse_media_type(header: str, essence: str, params: dict[str, str]) -> None:
    media = parse_media_type(header)
    assert media.essence == essence
    assert dict(media.params) == params


@pytest.mark.parametrize("header", ["label_size=1; text/csv", "textcsv", "", "text csv/x"])
def test_parse_media_type_rejects(header: str) -> None:
    with pytest.raises(UnsupportedMediaType, match="is not a media type"):
        parse_media_type(header)


# Werkzeug's parse_options_header is what smserve parsed headers with before (and what Flask
# still uses): on every header without RFC 2231's "key*" forms or "%22" (a multipart-form
# quirk), parse_parameters must read the same essence and parameters.
HEADER_PIECES = st.sampled_from(
    [
        "text/csv",
        "Text/CSV",
        "a",
        "B",
        "1",
        "_",
        "-",
        ".",
        "=",
        ";",
        "; ",
        " ",
        "\t",
        '"',
        "\\",
        ",",
        "/",
        "q",
        "label_size",
        "é",
        "'",
        "~",
    ]
)


@given(st.lists(HEADER_PIECES, max_size=14).map("".join))
@settings(max_examples=3000, deadline=None)
def test_parse_parameters_reads_what_werkzeug_reads(header: str) -> None:
    from werkzeug.http import parse_options_header

    assert parse_parameters(header) == parse_options_header(header)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'text/csv; label_size="1"; charset=utf-8',
            ("text/csv", {"label_size": "1", "charset": "utf-8"}),
        ),
        ('text/csv;header="a;b\\"c"', ("text/csv", {"header": 'a;b"c'})),
        ("text/csv; label_size 1; charset=utf-8", ("text/csv", {"charset": "utf-8"})),
        ('text/csv; a="unclosed; charset=utf-8', ("text/csv", {})),
        ("text/csv; q=1; Q=0.5", ("text/csv", {"q": "0.5"})),
        ("; q=0.5", ("", {})),
        # RFC 2231's extended names are no media-type parameter: kept as sent, not decoded
        ("text/csv; name*=utf-8''a%20b", ("text/csv", {"name*": "utf-8''a%20b"})),
    ],
    ids=lambda value: repr(value),
)
def test_parse_parameters(header: str, expected: tuple[str, dict[str, str]]) -> None:
    assert parse_parameters(header) == expected


def test_media_parsing_imports_no_werkzeug() -> None:
    code = "import sys, smserve.media; print('werkzeug' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
