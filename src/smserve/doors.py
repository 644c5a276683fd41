"""What every front door speaks, with no HTTP in sight: a DoorRequest in, a DoorReply out.

A door (``smserve.sagemaker``, ``smserve.tfserving``, ``smserve.v2``) is a transport-free API
over the model repository and the inference service; ``smserve.http`` turns HTTP requests into
DoorRequests and DoorReplies into HTTP responses, the same way for every door, and counts each
reply in the metrics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

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
    ``infer``, ...; None: not counted) for ``model``; ``version`` (the version that answered)
    also becomes ``X-Model-Version`` on a success."""

    status: int
    body: bytes
    content_type: str | None
    headers: tuple[tuple[str, str], ...] = ()
    model: str = ""
    verb: str | None = None
    version: int | None = None


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
