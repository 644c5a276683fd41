"""What every front door speaks, with no HTTP in sight: a DoorRequest in, a DoorReply out; and
how a door describes itself (``DoorSpec``), so that nothing outside its package has to know it.

A door is a transport-free API over the model repository and the inference service, in a
package of its own that exports one ``DoorSpec``: its name, its routes (opened over the
models), its error envelope, what nginx must know of it, its OpenAPI
fragment and its own listener, if any. ``smserve.door_table`` lists the doors in order; the
HTTP layer, the gunicorn worker and the nginx configuration derive everything from that table,
so a new door is its own package plus one line there. ``smserve.http`` turns HTTP requests
into DoorRequests and DoorReplies into HTTP responses, the same way for every door, and counts
each reply in the metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from smserve.budget import MemoryBudget
    from smserve.codecs import CodecRegistry
    from smserve.config import Declared, Settings
    from smserve.metrics import Metrics, ProtocolNames
    from smserve.openapi import Fragment
    from smserve.repository.modes import Models

EMPTY: Mapping[str, str] = {}


class Headers(Protocol):
    """Request headers, looked up case-insensitively."""

    def get(self, key: str, /) -> str | None: ...


@dataclass(frozen=True, slots=True)
class DoorRequest:
    """One request: ``path`` as the client sent it (still percent-encoded, no query string);
    ``body`` already read and within the payload limit; ``route`` the name of the route that
    matched (a door's own name for it) and ``params`` its variables."""

    method: str
    path: str
    headers: Headers
    body: bytes = b""
    query: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    route: str = ""
    params: Mapping[str, str] = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True, slots=True)
class DoorReply:
    """One answer, written as given: ``content_type`` None means no Content-Type (an empty
    body). The metrics count it as ``verb`` (their API name: ``invocations``, ``predict``,
    ``infer``, ...; None: not counted in TF Serving's names) for ``model``; ``version`` (the
    version that answered) also becomes ``X-Model-Version`` on a success; ``stages`` the
    seconds its decode, predict and encode took, when the service measured them."""

    status: int
    body: bytes
    content_type: str | None
    headers: tuple[tuple[str, str], ...] = ()
    model: str = ""
    verb: str | None = None
    version: int | None = None
    stages: tuple[float, float, float] | None = field(default=None, compare=False)


class Door(Protocol):
    """What the HTTP layer needs of every door besides its routes."""

    def error_reply(self, exc: Exception, request: DoorRequest) -> DoorReply:
        """The door's answer to ``exc``, raised while answering ``request`` (or reading it)."""
        ...


class Listener(Protocol):
    """A door with a port of its own (gRPC), run by each worker beside HTTP."""

    def begin_stop(self) -> None:
        """Stop taking requests; those in flight go on (safe from a signal handler)."""
        ...

    def wait_stopped(self, timeout_s: float) -> bool:
        """True once everything in flight has finished, within ``timeout_s``."""
        ...


Handler = Callable[[DoorRequest], DoorReply]


@dataclass(frozen=True, slots=True)
class Envelope:
    """How a door writes an error: a JSON object whose ``keys`` all hold the message. ``name``
    tells envelopes apart where they are served as files or locations (nginx's error pages)."""

    name: str
    keys: tuple[str, ...]

    def body(self, message: str) -> bytes:
        return json.dumps(dict.fromkeys(self.keys, message)).encode()


@dataclass(frozen=True, slots=True)
class Route:
    """``methods`` on ``rule``, answered by ``handler``; ``name`` is the route's name in the
    DoorRequest. A rule is a path whose ``<name>`` parts are its variables (the request's
    ``params``): ``<name>`` one path segment, ``<path:name>`` the rest of the path (slashes
    included), ``<model:name>`` a model name (the rest, never ending in ``/invoke``).
    ``counted``: the answer counts in the metrics; ``waits``: it is 503 while the models load
    (a page about the server itself does neither; ``/ping`` waits, uncounted)."""

    methods: tuple[str, ...]
    rule: str
    name: str
    handler: Handler
    counted: bool = True
    waits: bool = True


@dataclass(frozen=True, slots=True)
class Prefix:
    """Every path ``pattern`` fully matches, handed to ``handler``: a door that parses its own
    routes, and answers unknown paths under it itself."""

    pattern: re.Pattern[str]
    handler: Handler


@dataclass(frozen=True, slots=True)
class Mount:
    """A door opened over the models: its ``door`` (for error replies), its routes (each
    declared once) and its prefix."""

    door: Door
    routes: tuple[Route, ...] = ()
    prefix: Prefix | None = None


@dataclass(frozen=True, slots=True)
class Setup:
    """What a door is opened with: the settings, the models, each request's memory budget,
    the codec registry (the media types ``/invocations`` speaks) and the metrics."""

    settings: Settings
    models: Models
    budget: MemoryBudget
    registry: CodecRegistry
    metrics: Metrics


Start = Callable[["Settings", "Models", "Metrics | None"], "Listener | None"]


@dataclass(frozen=True, slots=True)
class DoorSpec:
    """One door, as everything outside its package sees it.

    * ``name``: its requests' label in the metrics;
    * ``envelope``: its error body (None: not an HTTP door), also for the errors nginx and the
      server answer themselves on its paths;
    * ``open``: mounts it over the models (None: no HTTP routes);
    * ``nginx_locations``: nginx ``location`` matches of its paths (empty: the default
      location's);
    * ``openapi``: its share of ``/openapi.json``;
    * ``listener``: starts its own port in each worker;
    * ``prepare``: run once in the server's first process, before anything forks: checks what
      the door needs that may be missing (an optional package) and returns the settings to
      serve with: a door that is on only by default is turned off (with one warning line), one
      the user asked for raises ConfigError naming what to install;
    * ``metric_names``: its protocol's own metric names (``metrics.protocol``: the families,
      their buckets, how its statuses are named), in which the metrics count every door's
      API requests too; the door serves their page itself (``Metrics.render``);
    * ``model_header``, ``request_id_header``: the request headers naming the model and the
      caller's request id, for the access log;
    * ``reserved_paths``: the path prefixes it answers, which no setting (the metrics page)
      may take;
    * ``health_paths``: its health checks, which must answer while every worker is busy:
      behind nginx the supervisor answers a GET (or HEAD) of each, 200 (empty) once the
      server is ready, 503 in the door's envelope before (the door still routes them for
      gunicorn alone); reserved like ``reserved_paths``;
    * ``settings``: its own settings (``config.declared``): read with the others when the
      server starts, listed in the settings reference, read back with ``Declared.of``."""

    name: str
    envelope: Envelope | None = None
    open: Callable[[Setup], Mount] | None = None
    nginx_locations: tuple[str, ...] = ()
    openapi: Callable[[Setup], Fragment] | None = None
    listener: Start | None = None
    prepare: Callable[[Settings], Settings] | None = None
    metric_names: ProtocolNames | None = None
    model_header: str | None = None
    request_id_header: str | None = None
    reserved_paths: tuple[str, ...] = ()
    health_paths: tuple[str, ...] = ()
    settings: tuple[Declared[Any], ...] = ()
