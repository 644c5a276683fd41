"""``http.rules``: a route's rule compiled from its converters, and the table that finds a
request's target: exact paths, then patterns in the table's order, then prefixes; HEAD with
GET; the methods a path allows."""

from __future__ import annotations

import re

import pytest

from smserve.doors import DoorReply, DoorRequest
from smserve.http.rules import Table, Target, compile_rule
from smserve.media import TEXT


class _Door:
    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        return DoorReply(500, b"", None)


def _target(name: str) -> Target:
    return Target(name, lambda request: DoorReply(200, name.encode(), TEXT), _Door(), "test")


def test_a_rule_without_variables_is_its_exact_path() -> None:
    assert compile_rule("/models") == "/models"


@pytest.mark.parametrize(
    ("rule", "path", "params"),
    [
        ("/endpoints/<name>/invocations", "/endpoints/e1/invocations", {"name": "e1"}),
        ("/endpoints/<name>/invocations", "/endpoints/a/b/invocations", None),
        ("/models/<path:name>/invoke", "/models/a/b/invoke", {"name": "a/b"}),
        ("/models/<model:name>", "/models/a/b", {"name": "a/b"}),
        ("/models/<model:name>", "/models/a/invoke", None),  # the invoke route's alone
        ("/models/<model:name>", "/models/", None),
        ("/a.b/<x>", "/aXb/1", None),  # literal parts are escaped
    ],
)
def test_a_rule_with_variables_matches_as_its_converters_say(
    rule: str, path: str, params: dict[str, str] | None
) -> None:
    pattern = compile_rule(rule)
    assert isinstance(pattern, re.Pattern)
    match = pattern.fullmatch(path)
    assert (match.groupdict() if match else None) == params


def test_an_unknown_converter_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown converter 'int'"):
        compile_rule("/x/<int:n>")


def _table() -> Table:
    table = Table()
    table.add(("GET", "POST"), "/models", _target("models"))
    table.add(("GET",), "/models/<model:name>", _target("describe"))
    table.add(("DELETE",), "/models/<model:name>", _target("unload"))
    table.add(("GET",), "/models/<path:rest>", _target("shadowed"))
    table.add(("POST",), "/models/<path:name>/invoke", _target("invoke"))
    table.add(("GET",), "/models/special", _target("special"))
    table.add_prefix(re.compile(r"/models/.*"), _target("prefix"))
    return table


@pytest.mark.parametrize(
    ("method", "path", "name"),
    [
        ("GET", "/models", "models"),
        ("HEAD", "/models", "models"),  # HEAD with GET
        ("POST", "/models", "models"),
        ("GET", "/models/special", "special"),  # exact before patterns
        ("GET", "/models/a", "describe"),  # patterns in the table's order
        ("DELETE", "/models/a", "unload"),
        ("POST", "/models/a/invoke", "invoke"),
        ("PUT", "/models/a", "prefix"),  # no route takes it: the prefix does
        ("GET", "/models/a/invoke", "shadowed"),
    ],
)
def test_exact_paths_then_patterns_then_prefixes(method: str, path: str, name: str) -> None:
    found = _table().find(method, path)
    assert found is not None
    assert found.target.name == name


def test_nothing_found_outside_every_route_and_prefix() -> None:
    table = _table()
    assert table.find("PUT", "/models") is None
    assert table.find("GET", "/other") is None


def test_the_methods_a_path_allows_come_from_every_route_matching_it() -> None:
    table = _table()
    assert table.allowed("/models") == ["GET", "HEAD", "OPTIONS", "POST"]
    assert table.allowed("/models/a") == ["DELETE", "GET", "HEAD", "OPTIONS"]
    assert table.allowed("/other") == []
    assert table.rules[0] == (("GET", "POST"), "/models")
