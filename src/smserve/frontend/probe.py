"""The supervisor's start-up probe: one request through nginx to a worker and back.

The sockets can all be in place while nginx still cannot carry a request (a security policy,
a socket it may not use): then every request would get 502, forever. So before ``/ping`` says
200 the supervisor asks nginx, on the loopback port, for ``GET /_smserve/probe``: nginx hands
it to a worker like any path, and the worker's router answers 404 (no door has the path, so
no metric counts it, and no model is touched). Any answer but a 502 proves the path works.
The probe waits as long as the workers take to load their models, checking between reads
that it should still wait (the children alive, no stop requested)."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable

from smserve.config import SERVER_PREFIX

PATH = f"{SERVER_PREFIX}probe"
_REQUEST = f"GET {PATH} HTTP/1.1\r\nHost: smserve-probe\r\nConnection: close\r\n\r\n".encode()
POLL_S = 0.05


def through_nginx(port: int, keep_waiting: Callable[[], bool]) -> int | None:
    """The status nginx answers the probe with; None once ``keep_waiting()`` is False."""
    while keep_waiting():
        status = _attempt(port, keep_waiting)
        if status is not None:
            return status
        time.sleep(POLL_S)
    return None


def _attempt(port: int, keep_waiting: Callable[[], bool]) -> int | None:
    """One request; None when nginx is not listening yet or closed without an answer."""
    try:
        connection = socket.create_connection(("127.0.0.1", port), timeout=1.0)
    except OSError:
        return None
    with connection:
        try:
            connection.sendall(_REQUEST)
            return _status(connection, keep_waiting)
        except OSError:
            return None


def _status(connection: socket.socket, keep_waiting: Callable[[], bool]) -> int | None:
    received = b""
    while b"\r\n" not in received:
        readable, _, _ = select.select([connection], [], [], POLL_S)
        if not readable:
            if not keep_waiting():
                return None
            continue
        chunk = connection.recv(4096)
        if not chunk:
            return None
        received += chunk
    parts = received.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
