"""The door table's routes as one lookup: a route's rule compiled, and every route of every door
found for a request's method and path.

A rule without variables is an exact path, found with one dictionary lookup; a rule with them
(``doors.Route``: ``<name>``, ``<path:name>``, ``<model:name>``) is a pattern, tried in the
table's order. Paths are matched percent-decoded (``PATH_INFO``), as the variables' values
are handed on. Every route also answers HEAD where it answers GET, and OPTIONS (listing what
its path allows) unless it declares OPTIONS itself, as HTTP frameworks do. A prefix (a door
that parses its own paths) is tried after every route; a path some route matches with another
method, and no prefix takes, is a 405 that names the methods its routes allow."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from smserve.doors import EMPTY, Door, Handler

CONVERTERS: Mapping[str, str] = {
    "": r"[^/]+",  # one path segment
    "path": r"[^/].*?",  # the rest of the path, slashes included
    # a model name as sent, slashes included (so a name with one gets the 400 stating the
    # naming rule, not a 404), but never ending in /invoke: that path is the invoke route's
    # alone, and its Allow header must not list the name routes' methods
    "model": r"[^/].*?(?<!/invoke)",
}
_VARIABLE = re.compile(r"<(?:([a-z]+):)?([A-Za-z_][A-Za-z0-9_]*)>")


@dataclass(frozen=True, slots=True)
class Target:
    """What answers a request: its handler, the door that answers its errors (and its name
    in the metrics), and whether it is counted and waits for the models."""

    name: str
    handler: Handler
    door: Door
    door_name: str
    counted: bool = True
    waits: bool = True


@dataclass(frozen=True, slots=True)
class Found:
    """A request's target and its path's variables."""

    target: Target
    params: Mapping[str, str] = field(default_factory=lambda: EMPTY)


def compile_rule(rule: str) -> str | re.Pattern[str]:
    """``rule`` itself when it has no variables (an exact path), else its pattern."""
    if _VARIABLE.search(rule) is None:
        return rule
    parts, at = [], 0
    for variable in _VARIABLE.finditer(rule):
        converter, name = variable.groups()
        if (converter or "") not in CONVERTERS:
            raise ValueError(f"unknown converter {converter!r} in route rule {rule!r}")
        parts.append(re.escape(rule[at : variable.start()]))
        parts.append(f"(?P<{name}>{CONVERTERS[converter or '']})")
        at = variable.end()
    parts.append(re.escape(rule[at:]))
    return re.compile("".join(parts), re.DOTALL)


def answered_methods(methods: tuple[str, ...]) -> frozenset[str]:
    """The methods a route answers: its own, and HEAD with GET."""
    return frozenset(methods) | ({"HEAD"} if "GET" in methods else set())


class Table:
    """Every route (exact paths, then patterns) and prefix, in the table's order."""

    def __init__(self) -> None:
        self.exact: dict[str, dict[str, Target]] = {}
        self.patterns: list[tuple[re.Pattern[str], frozenset[str], Target]] = []
        self.prefixes: list[tuple[re.Pattern[str], Target]] = []
        self.rules: list[tuple[tuple[str, ...], str]] = []  # (methods, rule), as declared

    def add(self, methods: tuple[str, ...], rule: str, target: Target) -> None:
        """A route: the first one added for a method and path wins."""
        self.rules.append((methods, rule))
        compiled, answered = compile_rule(rule), answered_methods(methods)
        if isinstance(compiled, str):
            by_method = self.exact.setdefault(compiled, {})
            for method in answered:
                by_method.setdefault(method, target)
        else:
            self.patterns.append((compiled, answered, target))

    def add_prefix(self, pattern: re.Pattern[str], target: Target) -> None:
        self.prefixes.append((pattern, target))

    def find(self, method: str, path: str) -> Found | None:
        """What answers ``method`` on ``path`` (None: no route or prefix does)."""
        by_method = self.exact.get(path)
        if by_method is not None:
            target = by_method.get(method)
            if target is not None:
                return Found(target)
        for pattern, methods, candidate in self.patterns:
            if method in methods:
                match = pattern.fullmatch(path)
                if match is not None:
                    return Found(candidate, match.groupdict())
        for prefix, candidate in self.prefixes:
            if prefix.fullmatch(path) is not None:
                return Found(candidate)
        return None

    def allowed(self, path: str) -> list[str]:
        """The methods the routes matching ``path`` answer, OPTIONS included, sorted (empty:
        no route matches it)."""
        found = set(self.exact.get(path, ()))
        for pattern, methods, _ in self.patterns:
            if pattern.fullmatch(path) is not None:
                found |= methods
        return sorted(found | {"OPTIONS"}) if found else []
