"""The requests fuzz.py sends: valid bodies of every content type the server reads, mutated
(see fuzz_mutations.py), under odd headers, methods, paths, framings (chunked, pipelined,
hostile Content-Length/Transfer-Encoding) and sizes up to (and just over) the payload limit.

Each request is built from one ``random.Random``, so a seed and a client index replay it.
``Fuzzed.wire()`` is the exact bytes sent."""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.fuzz.fuzz_bodies import Bodies, chunked
from bench.fuzz.fuzz_mutations import (
    ACCEPTS,
    BODY_TYPES,
    CSV,
    JSON,
    content_type_value,
    mutate,
    odd_headers,
)

INVOCATION_PATHS = ("/invocations", "/invocations", "/invocations", "/endpoints/ep/invocations",
                    "/invocations?x=1", "/models/model/invoke", "/invocations/")  # fmt: skip
TFS_PATHS = ("/v1/models/model:predict", "/v1/models/model/versions/1:predict",
             "/v1/models/model/versions/7:predict", "/v1/models/model:classify",
             "/v1/models/model:regress", "/v1/models/model:explain",
             "/v1/models/model/labels/stable:predict", "/v1/models/MODEL:predict",
             "/v1/models/model:PREDICT", "/v1/models/:predict", "/v1/models/model%3Apredict",
             "/v1/models/model:predict/extra", "/v1/models/model", "/v1/models/model/metadata",
             "/v1/models/model/versions/1/metadata", "/v1/models/nope:predict")  # fmt: skip
V2_PATHS = ("/v2/models/model/infer", "/v2/models/model/infer", "/v2/models/model/versions/1/infer",
            "/v2/models/model/versions/7/infer", "/v2/models/nope/infer", "/v2/models/model",
            "/v2/models/model/ready", "/v2/health/live", "/v2/health/ready", "/v2",
            "/v2/models/model/versions/x/infer", "/v2/models//infer", "/v2/models/model/infer/x",
            "/v2/models/xgboost/infer", "/v2/models/kmeans/infer")  # fmt: skip
OTHER_PATHS = ("/", "/ping", "/execution-parameters", "/metrics", "/models", "/models/a",
               "/models/a/invoke", "/v1", "/v1/models", "/%00", "/..%2f..%2fetc/passwd",
               "//invocations", "/INVOCATIONS", "/ping?" + "q=" * 1500, "*",
               "http://example.com/invocations", "/%zz", "/a%20b", "/endpoints//invocations",
               "/models/%2e%2e/invoke")  # fmt: skip
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "FOO", "get",
           "P0ST", "CONNECT", "PROPFIND")  # fmt: skip
ODD_VERSIONS = (
    "HTTP/2.0",
    "HTTP/1.2",
    "HTTP/0.9",
    "HTTP/9.9",
    "HTTX/1.1",
    "HTTP/1.1 x",
    "http/1.1",
)
Header = tuple[bytes, bytes]


@dataclass
class Fuzzed:
    """One request. ``one_shot`` ones (hostile framing) get a connection of their own."""

    kind: str
    method: str = "POST"
    path: str = "/invocations"
    headers: list[Header] = field(default_factory=list)
    body: bytes = b""
    framing: str = "length"  # length | chunked | none (the headers say it, if anything)
    chunks: list[int] = field(default_factory=list)
    version: str = "HTTP/1.1"
    host: bool = True
    one_shot: bool = False
    may_drop: bool = False  # the server may close without answering (the body is cut short)
    half_close: bool = False  # shut the sending side once sent
    raw: bytes | None = None  # sent as is instead of the above
    then: Fuzzed | None = None  # pipelined: sent in the same write, answered after this one

    def wire(self) -> bytes:
        if self.raw is not None:
            return self.raw
        line = f"{self.method} {self.path} {self.version}".encode("utf-8", "surrogateescape")
        lines = [line, *([b"Host: fuzz"] if self.host else [])]
        lines += [name + b": " + value for name, value in self.headers]
        if self.framing == "length":
            lines.append(b"Content-Length: " + str(len(self.body)).encode())
        elif self.framing == "chunked":
            lines.append(b"Transfer-Encoding: chunked")
        if self.one_shot:
            lines.append(b"Connection: close")
        body = chunked(self.body, self.chunks) if self.framing == "chunked" else self.body
        request = b"\r\n".join(lines) + b"\r\n\r\n" + body
        return request + (self.then.wire() if self.then else b"")

    def describe(self) -> str:
        if self.raw is not None:
            return f"{self.kind}: raw {self.raw[:120]!r}"
        headers = [(n[:40], v[:60]) for n, v in self.headers]
        return (
            f"{self.kind}: {self.method} {self.path[:80]} {self.version} headers={headers} "
            f"framing={self.framing} body={len(self.body)}B {self.body[:80]!r}"
        )


Kind = Callable[[random.Random, Bodies], Fuzzed]


def invocation(r: random.Random, bodies: Bodies) -> Fuzzed:
    """A body of one content type (valid, mutated or random bytes) to /invocations."""
    media_type = r.choice(BODY_TYPES)
    body = r.choice(bodies.valid[media_type])
    if r.random() < 0.6:
        body = mutate(r, body)
    elif r.random() < 0.1:
        body = r.randbytes(r.randint(0, 10000))
    request = Fuzzed("invocations", path=r.choice(INVOCATION_PATHS), body=body)
    request.headers = _type_headers(r, media_type) + odd_headers(r)
    _maybe_chunked(r, request)
    return request


def _type_headers(r: random.Random, media_type: str) -> list[Header]:
    headers = []
    content_type = content_type_value(r, media_type)
    if content_type is not None:
        headers.append((b"Content-Type", content_type))
    if r.random() < 0.7:
        headers.append((b"Accept", r.choice(ACCEPTS).encode()))
    return headers


def _maybe_chunked(r: random.Random, request: Fuzzed) -> None:
    if r.random() < 0.15:
        request.framing = "chunked"
        request.chunks = [r.randint(1, 4096) for _ in range(r.randint(0, 5))]


def tf_serving(r: random.Random, bodies: Bodies) -> Fuzzed:
    """A TF Serving REST request: JSON instances/inputs, mutated, sometimes gzip-encoded."""
    body = r.choice(bodies.tfs)
    if r.random() < 0.6:
        body = mutate(r, body)
    path = r.choice(TFS_PATHS)
    method = "GET" if path.endswith(("model", "metadata")) and r.random() < 0.7 else "POST"
    request = Fuzzed("tfserving", method=method, path=path, body=body)
    request.headers = _type_headers(r, JSON)
    if r.random() < 0.2:
        request.body = gzip.compress(body)
        request.body = mutate(r, request.body) if r.random() < 0.3 else request.body
        request.headers.append((b"Content-Encoding", b"gzip"))
    _maybe_chunked(r, request)
    return request


def v2(r: random.Random, bodies: Bodies) -> Fuzzed:
    """An Open Inference Protocol request: JSON or binary tensors, mutated, with a right,
    wrong or missing Inference-Header-Content-Length, sometimes gzip-encoded."""
    body, header_length = r.choice(bodies.v2)
    if r.random() < 0.6:
        body = mutate(r, body)
    path = r.choice(V2_PATHS)
    method = "POST" if path.endswith("/infer") or r.random() < 0.2 else "GET"
    request = Fuzzed("v2", method=method, path=path, body=body if method == "POST" else b"")
    request.headers = _type_headers(r, JSON)
    if header_length is not None or r.random() < 0.05:
        length = header_length if header_length is not None else r.randint(0, len(body) + 9)
        value = str(length + r.choice((0, 0, 0, -1, 1, 10**9))) if r.random() < 0.9 else "x"
        request.headers.append((b"Inference-Header-Content-Length", value.encode()))
    if r.random() < 0.1 and request.body:
        request.body = gzip.compress(request.body)
        request.headers.append((b"Content-Encoding", b"gzip"))
    _maybe_chunked(r, request)
    return request


def route(r: random.Random, bodies: Bodies) -> Fuzzed:
    """Any method on any path (routes that exist, MME and TF Serving ones, odd ones), with
    no body, random bytes or a valid CSV body (bodies nobody reads must be drained)."""
    paths = (*OTHER_PATHS, *INVOCATION_PATHS, *TFS_PATHS, *V2_PATHS, _random_path(r))
    request = Fuzzed("route", method=r.choice(METHODS), path=r.choice(paths))
    request.body = r.choice((b"", b"", r.randbytes(r.randint(1, 70000)), bodies.valid[CSV][2]))
    request.framing = r.choice(("length", "length", "none")) if not request.body else "length"
    request.headers = odd_headers(r)
    if r.random() < 0.05:
        request.version = "HTTP/1.0"
        request.headers.append((b"Connection", r.choice((b"keep-alive", b"close"))))
    elif r.random() < 0.02:
        request.version = r.choice(ODD_VERSIONS)
    return request


def _random_path(r: random.Random) -> str:
    alphabet = "abcXYZ019-._~%/?#&=:;@!$'()*+,[]é"
    return "/" + "".join(r.choice(alphabet) for _ in range(r.randint(0, 200)))


def header_abuse(r: random.Random, bodies: Bodies) -> Fuzzed:
    """A valid request with headers nginx must refuse (in JSON) or pass on unchanged."""
    request = Fuzzed("headers", body=bodies.valid[CSV][0], headers=[(b"Content-Type", b"text/csv")])
    abuse = r.randrange(9)
    if abuse == 0:
        request.headers.append((b"X-Big", b"a" * r.randint(8000, 40000)))
    elif abuse == 1:
        request.headers.append((b"X-Nul", b"a\x00b"))
    elif abuse == 2:
        request.headers.append((b"X-No-Colon-Here", b"") if r.random() < 0.5 else (b"X-A ", b"b"))
    elif abuse == 3:
        request.headers.append((b"X-Folded", b"a\r\n b"))
    elif abuse == 4:
        request.headers += [(f"X-H{i}".encode(), b"v" * 100) for i in range(r.randint(50, 400))]
    elif abuse == 5:
        request.headers.append((bytes([r.randrange(1, 32)]) + b"X-Ctl", b"1"))
    elif abuse == 6:
        request.host = r.random() < 0.5
        request.headers.append((b"Host", b"other") if request.host else (b"X-No-Host", b"1"))
    elif abuse == 7:
        request.headers.append((b"X-Latin", bytes(range(128, 256))))
    else:
        request.headers.append((b"X-Ctl-Value", bytes([r.randrange(1, 32)])))
    return request


def garbage(r: random.Random, bodies: Bodies) -> Fuzzed:
    """Not HTTP at all: random bytes (no line breaks), then the end of a header block."""
    noise = r.randbytes(r.randint(1, 3000)).replace(b"\r", b"").replace(b"\n", b"")
    return Fuzzed("garbage", raw=noise + b"\r\n\r\n")


def pipelined(r: random.Random, bodies: Bodies) -> Fuzzed:
    """Two requests in one write: the second's answer must follow the first's."""
    first = r.choice((invocation, route, tf_serving))(r, bodies)
    first.kind, first.raw, first.one_shot = "pipelined", None, False
    first.then = invocation(r, bodies)
    return first


def near_limit(r: random.Random, bodies: Bodies) -> Fuzzed:
    """A CSV body just under, at or just over the payload limit."""
    request = Fuzzed("limit", body=bodies.near_limit(r), headers=[(b"Content-Type", b"text/csv")])
    _maybe_chunked(r, request)
    return request
