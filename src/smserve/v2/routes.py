"""The Open Inference Protocol's URL grammar under ``/v2``, matched on the raw path.

* GET  ``/v2`` (also ``/v2/``), ``/v2/health/live``, ``/v2/health/ready``
* GET  ``/v2/models/<m>[/versions/<n>]`` and ``.../ready``
* POST ``/v2/models/<m>[/versions/<n>]/infer``

As in Triton's HTTP server: a path outside this grammar is ``404 Not Found``, a known path
with another method ``405 Method Not Allowed``, a version is digits only, and the model name
is percent-decoded after matching (``a%2Fb`` names model ``a/b``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from smserve.errors import InvalidInput

_SERVER = re.compile(r"/v2/?|/v2/health/(live|ready)")
_MODEL = re.compile(r"/v2/models/([^/]+)(?:/versions/([0-9]+))?(?:/(infer|ready))?")
_INT64_MAX = 2**63 - 1
NOT_FOUND = "not_found"
NOT_ALLOWED = "method_not_allowed"


@dataclass(frozen=True, slots=True)
class Route:
    """A parsed request. ``action``: ``server_metadata``, ``live``, ``ready``,
    ``model_metadata``, ``model_ready``, ``infer``, ``not_found`` or ``method_not_allowed``."""

    action: str
    model: str = ""
    version: int | None = None


def is_api_path(path: str) -> bool:
    """True for every path this door owns: ``/v2`` and everything under ``/v2/``."""
    return path == "/v2" or path.startswith("/v2/")


def parse_route(method: str, path: str) -> Route:
    """The route for ``method`` on the raw ``path``; raises InvalidInput for a version
    beyond int64."""
    server = _SERVER.fullmatch(path)
    if server is not None:
        return _checked(method, "GET", Route(server.group(1) or "server_metadata"))
    model = _MODEL.fullmatch(path)
    if model is None:
        return Route(NOT_FOUND)
    name, version, kind = model.groups()
    route = Route(_model_action(kind), unquote(name), parse_version(version or ""))
    return _checked(method, "POST" if kind == "infer" else "GET", route)


def _model_action(kind: str | None) -> str:
    return "model_metadata" if kind is None else "infer" if kind == "infer" else "model_ready"


def _checked(method: str, allowed: str, route: Route) -> Route:
    if method != allowed:
        return Route(NOT_ALLOWED, route.model, route.version)
    return route


def parse_version(text: str) -> int | None:
    """A model version as the client wrote it ("": the newest); raises InvalidInput for
    anything but digits, and for a version beyond int64."""
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        raise InvalidInput(f"model version {text!r} is not a number: send digits (or no version)")
    value = int(text)
    if value > _INT64_MAX:
        raise InvalidInput(f"model version {text} is out of range: use at most {_INT64_MAX}")
    return value
