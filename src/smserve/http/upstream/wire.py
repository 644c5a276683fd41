"""A request head from nginx, parsed in one pass into a WSGI environ; an answer's head.

What nginx forwards is HTTP/1.1 it has already checked (``frontend.nginx``): an origin-form
target, token header names, no bare CR or LF, no NUL, and a Content-Length for every body
(``proxy_request_buffering``). So the parse is strict and short, and anything else is refused
with ``HeadError`` (a 400, then the connection closes) instead of being interpreted.

The environ is the one gunicorn builds for the same request, for everything the app reads:
``PATH_INFO`` percent-decoded to latin-1, ``RAW_URI``, ``CONTENT_TYPE``/``CONTENT_LENGTH``,
repeated headers joined with commas, ``SERVER_NAME``/``SERVER_PORT`` from Host (a unix socket
has no address; two fixes: an IPv6 host stays whole, and without a Host the name is
``localhost`` where gunicorn gives its socket's path), and header names with an underscore
dropped (gunicorn's ``header_map`` default: ``X-Foo_Bar`` must not pass for ``X-Foo-Bar``).
The scheme is ``http``: nginx terminates the client's connection, and an ``X-Forwarded-Proto``
a client sends is not taken at its word.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

HEAD_END = b"\r\n\r\n"
MAX_HEAD_BYTES = 1 << 20  # nginx forwards at most 4 x 64 KiB of headers (frontend.error_pages)
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# gunicorn's rule for a method: a token without lower case or '#', 3 to 20 characters (nginx
# forwards any of upper case, '-' and '_': M-SEARCH, MY_METHOD); the app answers 405 to those
# no route takes.
_METHOD = re.compile(r"[!$%&'*+\-.^_`|~0-9A-Z]{3,20}")
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade"})
_NO_BODY_STATUSES = frozenset({"204", "304"})


class HeadError(ValueError):
    """A request head the worker does not take: answered 400, then the connection closes."""


@dataclass(frozen=True, slots=True)
class Head:
    """A parsed request head: the environ (without ``wsgi.input``) and the body's length."""

    environ: dict[str, Any]
    length: int
    keep_alive: bool


def constants(multiprocess: bool) -> dict[str, Any]:
    """The environ entries every request shares."""
    return {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": multiprocess,
        "wsgi.run_once": False,
        "SCRIPT_NAME": "",
        "REMOTE_ADDR": "",
    }


def parse(head: bytes, shared: dict[str, Any]) -> Head:
    """``head`` (up to, without, its blank line) as a Head; raises HeadError."""
    line_ends = head.count(b"\r\n")
    if head.count(b"\r") != line_ends or head.count(b"\n") != line_ends:
        raise HeadError("a bare CR or LF in the request head")
    request_line, *lines = head.split(b"\r\n")
    environ = dict(shared)
    version = _request_line(request_line, environ)
    _headers(lines, environ)
    _server(environ)
    connection = environ.get("HTTP_CONNECTION", "").lower()
    keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
    return Head(environ, _length(environ), keep_alive)


def _request_line(line: bytes, environ: dict[str, Any]) -> str:
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or _METHOD.fullmatch(parts[0]) is None:
        raise HeadError("a malformed request line")
    method, target, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0") or not target.startswith("/"):
        raise HeadError(f"an unexpected request line: {method} {target[:80]} {version[:20]}")
    path, _, query = target.partition("?")
    environ["REQUEST_METHOD"] = method
    environ["RAW_URI"] = target
    quoted = "%" in path or not path.isascii()
    environ["PATH_INFO"] = unquote_to_bytes(path).decode("latin-1") if quoted else path
    environ["QUERY_STRING"] = query
    environ["SERVER_PROTOCOL"] = version
    return version


def _headers(lines: list[bytes], environ: dict[str, Any]) -> None:
    repeated: dict[str, list[str]] = {}
    for line in lines:
        name, colon, raw = line.partition(b":")
        key = _environ_key(name)
        if not colon or key is None or b"\0" in raw:
            raise HeadError(f"a malformed header line: {line[:80]!r}")
        if not key:
            continue  # gunicorn's header_map=drop
        value = raw.strip(b" \t").decode("latin-1")
        if key in _BODY_KEYS:
            if key == "CONTENT_LENGTH" and environ.get(key, value) != value:
                raise HeadError("two different Content-Length headers")
        elif key in environ:
            repeated.setdefault(key, [environ[key]]).append(value)
        environ[key] = value
    for key, values in repeated.items():
        environ[key] = ",".join(values)


_BODY_KEYS = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})
_KEYS: dict[bytes, str] = {}  # header name -> environ key, for the names seen so far
_KEYS_KEPT = 512


def _environ_key(name: bytes) -> str | None:
    """``name``'s environ key (``""``: dropped, for an underscore); None: not a header name."""
    key = _KEYS.get(name)
    if key is not None:
        return key
    if _TOKEN.fullmatch(name) is None:
        return None
    key = "" if b"_" in name else name.decode("latin-1").upper().replace("-", "_")
    if key and key not in _BODY_KEYS:
        key = "HTTP_" + key
    if len(_KEYS) >= _KEYS_KEPT:
        _KEYS.clear()
    _KEYS[name] = key
    return key


def _server(environ: dict[str, Any]) -> None:
    host = environ.get("HTTP_HOST")
    if not host:  # HTTP/1.0 without one: gunicorn would name its socket's path here
        environ["SERVER_NAME"], environ["SERVER_PORT"] = "localhost", "80"
        return
    name, _, port = host.rpartition(":")
    if name and port.isdigit():
        environ["SERVER_NAME"], environ["SERVER_PORT"] = name, port
    else:
        environ["SERVER_NAME"], environ["SERVER_PORT"] = host, "80"


def _length(environ: dict[str, Any]) -> int:
    if "HTTP_TRANSFER_ENCODING" in environ:
        raise HeadError("a Transfer-Encoding from the front end (nginx sends a Content-Length)")
    length = environ.get("CONTENT_LENGTH", "0")
    if not (length.isascii() and length.isdigit()):
        raise HeadError(f"an invalid Content-Length: {length[:40]!r}")
    return int(length)


def answer_head(status: str, headers: list[tuple[str, str]], close: bool, chunked: bool) -> bytes:
    """The answer's status line and headers, ending with its blank line. The app's hop-by-hop
    headers are dropped (the connection's framing is the worker's); raises ValueError for a
    header that would break the framing (a CR or LF in it)."""
    lines = [f"HTTP/1.1 {status}"]
    for name, value in headers:
        if name.lower() not in _HOP_BY_HOP:
            lines.append(f"{name}: {value}")
            if "\r" in lines[-1] or "\n" in lines[-1]:
                raise ValueError(f"the answer header {name[:40]!r} holds a CR or LF")
    if close:
        lines.append("Connection: close")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def may_have_body(status: str, method: str) -> bool:
    """Whether an answer with ``status`` to ``method`` carries a body at all."""
    code = status[:3]
    return method != "HEAD" and code not in _NO_BODY_STATUSES and not code.startswith("1")
