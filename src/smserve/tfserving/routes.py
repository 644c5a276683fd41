"""TF Serving's URL grammar under ``/v1/``, matched on the raw (still percent-encoded) path.

* POST ``/v1/models/<m>[/versions/<n>|/labels/<l>]:<classify|regress|predict>``
* GET  ``/v1/models[/<m>][/versions/<n>|/labels/<l>][/metadata]``

Paths match case-insensitively, but the verb and the ``metadata`` sub-resource are compared
case-sensitively: ``:PREDICT`` is a malformed request, ``/METADATA`` a status request. Model
names and labels are percent-decoded after matching, so ``a%2Fb`` names model ``a/b``.
Everything else under ``/v1/`` (other methods, other paths) is
``400 Malformed request: <METHOD> <path>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from smserve.errors import InvalidInput

API_PREFIX = re.compile(r"/v1/.*", re.IGNORECASE | re.DOTALL)
_POST = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/([0-9]+)|/labels/([^/:]+))?:(classify|regress|predict)",
    re.IGNORECASE,
)
_GET = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:/versions/([0-9]+)|/labels/([^/:]+))?(?:/(metadata))?",
    re.IGNORECASE,
)
_INT64_MAX = 2**63 - 1
VERBS = ("classify", "regress", "predict")
ACTIONS = (*VERBS, "status", "metadata")  # every action a well-formed request can have


@dataclass(frozen=True, slots=True)
class Route:
    """A parsed request: ``action`` is a verb, ``status``, ``metadata`` or ``malformed``."""

    action: str
    model: str = ""
    version: int | None = None
    label: str | None = None


def is_api_path(path: str) -> bool:
    """True for every path TF Serving's REST handler owns (``(?i)/v1/.*``)."""
    return API_PREFIX.fullmatch(path) is not None


def parse_route(method: str, path: str) -> Route:
    """The route for ``method`` on the raw ``path``; raises InvalidInput for a name or
    version that cannot be decoded. A route TF Serving would not dispatch is ``malformed``."""
    pattern = _POST if method == "POST" else _GET if method == "GET" else None
    match = pattern.fullmatch(path) if pattern is not None else None
    if match is None:
        return Route("malformed")
    model, version, label, last = match.groups()
    return Route(_action(method, last), unquote(model or ""), _version(version), _label(label))


def _action(method: str, last: str | None) -> str:
    if method == "GET":
        return "metadata" if last == "metadata" else "status"
    return last if last in VERBS else "malformed"


def _version(text: str | None) -> int | None:
    if text is None:
        return None
    value = int(text)
    if value > _INT64_MAX:
        raise InvalidInput(f"Failed to convert version: {text} to numeric.")
    return value


def _label(text: str | None) -> str | None:
    return None if text is None else unquote(text)


def malformed(method: str, path: str) -> InvalidInput:
    return InvalidInput(f"Malformed request: {method} {path}")
